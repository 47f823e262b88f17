import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type * as grpc from '@grpc/grpc-js';
import type { ServiceDefinition } from '@grpc/proto-loader';
import { Inject, Injectable, Logger, OnModuleInit, RequestMethod, Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import type { Root, Service } from 'protobufjs';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { DomainError, ForbiddenError, UnauthenticatedError, ValidationError } from '../../platform/errors/domain-error';
import { toEnvelope } from '../../platform/errors/error-envelope.filter';
import { assertJsonWithinLimits } from '../../platform/http/json-guard';
import { collectExtensions } from '../../platform/plugins/extension-registry';
import { AuthGuard } from '../../platform/identity/auth.guard';
import { PrincipalRequest, PUBLIC_KEY, SCOPES_ANY_KEY, SCOPES_KEY, SEAM_KEY } from '../../platform/identity/decorators';
import type { Principal } from '../../platform/identity/principal';
import { REQUEST_VALIDATION } from '../../platform/platform.module';
import { RequestValidationPipe } from '../../platform/http/request-validation.pipe';
import { parseTraceContext, withTraceContext } from '../../platform/tracing/trace-context';
import { SpanHandle, startSpan } from '../../platform/tracing/tracing';
import { ENGINE_SERVICE, engineJsonCodec, loadEngineRoot } from './engine-proto';
import { ENGINE_METHODS, EngineCall, EngineMethod, EngineMethodHandler, EngineMethodName, RestOperation } from './engine-method';
import { encodeRpcStatus, errorEnvelopeToStatus } from './error-status';
import { GrpcMetrics } from './grpc.metrics';
import { GrpcStatus, grpcStatusName } from './grpc-status';
import { JsonObject, ProtoJsonCodec, ProtoJsonError } from './json-struct';
import { InvariantViolation, WiringFault } from '../../platform/errors/internal-fault';

/** An Engine method this host does not serve, because REST does not serve its operation either. */
export class MethodNotServedError extends DomainError {
  constructor(method: string) {
    super('not_implemented', 501, `This host does not serve ${method}: its REST operation is not served either.`, { method: `${ENGINE_SERVICE}/${method}` });
  }
}

/** Thrown into a handler's work when the listener stops under it; the client resumes elsewhere. */
export class ListenerStoppingError extends DomainError {
  constructor() {
    super('unavailable', 503, 'The host is shutting down; retry on another replica (an event stream resumes from its last sequence).');
  }
}

/** The REST route a method stands for, read once from the controller's route metadata. */
export interface ResolvedOperation {
  op: RestOperation;
  handlerFn: (...args: unknown[]) => unknown;
  httpMethod: string;
  path: string;
  /** The twin's `@Scopes` (all required; none on a public route), as the guard enforces them. */
  scopes: string[];
  /** The twin's `@AnyScope`: one of these is required besides `scopes`. */
  anyOfScopes?: string[];
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** `1.2.3.4:5678`, `::1:5678` or `[::1]:5678` (grpc-js getPeer) → the client address. */
export function peerAddress(peer: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(peer);
  if (bracketed) return bracketed[1];
  const m = /^(.*):(\d+)$/.exec(peer);
  const host = m ? m[1] : peer;
  return host.startsWith('::ffff:') ? host.slice(7) : host;
}

type AnyCall = grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>;

/**
 * openwop.v1.Engine over the host's own request pipeline. Every call passes, in REST's order:
 * the request message read as its REST JSON body and held to the same JSON shape limits; the
 * host's AuthGuard, run against the twin REST route's handler (its scopes, public or seam marks,
 * and its verb's rate-limit class), with the bearer token from the `authorization` metadata; the
 * handler, which validates with the REST DTOs and calls the same services; and the REST error
 * envelope, mapped to google.rpc.Status with the envelope in details[]. Methods without a handler
 * answer UNIMPLEMENTED (with the envelope) before anything else, as an unknown route answers 404.
 */
@Injectable()
export class EngineServiceImplementation implements OnModuleInit {
  private readonly log = new Logger('grpc');
  // The proto is read when the listener starts (the first call of definition()), not at every boot:
  // a host whose gRPC port is off never loads protobufjs.
  private root?: Root;
  private get statusRoot(): Root {
    return (this.root ??= loadEngineRoot());
  }
  private get engineService(): Service {
    return this.statusRoot.lookupService(ENGINE_SERVICE);
  }
  private get codec(): ProtoJsonCodec {
    return engineJsonCodec();
  }
  private readonly pipe = new RequestValidationPipe(REQUEST_VALIDATION);
  private readonly handlers = new Map<EngineMethodName, { handler: EngineMethodHandler; operation: ResolvedOperation }>();
  /** Aborted once, when the listener stops; every call in flight listens to it (no listener limit). */
  private readonly stopping = (() => {
    const c = new AbortController();
    setMaxListeners(0, c.signal);
    return c;
  })();

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly guard: AuthGuard,
    private readonly metrics: GrpcMetrics,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  onModuleInit(): void {
    const methods = collectExtensions<unknown, EngineMethodHandler>(this.discovery, {
      name: 'gRPC method',
      metadataKey: EngineMethod.KEY,
      key: (_meta, handler) => `${ENGINE_SERVICE}/${handler.name}`,
      validate: (_meta, handler) => (typeof handler.handle === 'function' ? undefined : 'has no handle()'),
      invalid: 'skip',
    });
    for (const { provider: handler, providerName } of methods) {
      if (!(ENGINE_METHODS as readonly string[]).includes(handler.name)) throw new WiringFault(`${providerName}: ${handler.name} is not a method of ${ENGINE_SERVICE}`);
      this.handlers.set(handler.name, { handler, operation: resolveOperation(handler) });
    }
  }

  /** The methods served (the rest answer UNIMPLEMENTED), with the REST route each stands for and the scopes it requires. */
  served(): Array<{ method: EngineMethodName; kind: EngineMethodHandler['kind']; route: string; scopes: string[]; anyOfScopes?: string[] }> {
    return ENGINE_METHODS.filter((m) => this.handlers.has(m)).map((m) => {
      const { handler, operation } = this.handlers.get(m)!;
      return {
        method: m,
        kind: handler.kind,
        route: `${operation.httpMethod} ${operation.path}`,
        scopes: operation.scopes,
        ...(operation.anyOfScopes ? { anyOfScopes: operation.anyOfScopes } : {}),
      };
    });
  }

  /** Ends open event streams with UNAVAILABLE (the listener is stopping); unary calls run to their end. */
  stopStreams(): void {
    this.stopping.abort();
  }

  /**
   * The service definition to register: the proto's, with request decoding that never fails the
   * call on its own (grpc-js would answer INTERNAL without an envelope): a message that does not
   * decode reaches the pipeline as UnreadableRequest and is refused as INVALID_ARGUMENT.
   */
  definition(service: ServiceDefinition): ServiceDefinition {
    const out: ServiceDefinition = {};
    for (const [name, m] of Object.entries(service)) {
      out[name] = {
        ...m,
        requestDeserialize: (bytes: Buffer) => {
          try {
            return m.requestDeserialize(bytes);
          } catch (e) {
            return new UnreadableRequest(e instanceof Error ? e.message : String(e));
          }
        },
      };
    }
    return out;
  }

  /** The grpc-js implementation of every Engine method. */
  implementation(service: ServiceDefinition): grpc.UntypedServiceImplementation {
    const impl: grpc.UntypedServiceImplementation = {};
    for (const method of ENGINE_METHODS) {
      const def = service[method];
      if (!def) throw new WiringFault(`the proto has no ${ENGINE_SERVICE}/${method}`);
      // The message types by full name, from the proto itself: a method may answer a type of
      // another package (UnregisterWebhook's google.protobuf.Empty).
      const rpc = this.engineService.methods[method];
      if (!rpc?.resolvedRequestType || !rpc.resolvedResponseType) throw new WiringFault(`the proto has no message types for ${ENGINE_SERVICE}/${method}`);
      const requestType = rpc.resolvedRequestType.fullName.replace(/^\./, '');
      const responseType = rpc.resolvedResponseType.fullName.replace(/^\./, '');
      if (def.responseStream) {
        impl[method] = (call: grpc.ServerWritableStream<unknown, unknown>) => {
          void this.serveStream(method, requestType, responseType, call);
        };
      } else {
        impl[method] = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
          void this.serveUnary(method, requestType, responseType, call, callback);
        };
      }
    }
    return impl;
  }

  private async serveUnary(method: EngineMethodName, requestType: string, responseType: string, call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>): Promise<void> {
    const started = process.hrtime.bigint();
    this.metrics.started(method);
    const context = this.context(method, call);
    let code: number = GrpcStatus.OK;
    try {
      const entry = this.handlers.get(method);
      if (!entry || entry.handler.kind !== 'unary') throw new MethodNotServedError(method);
      const request = this.readRequest(requestType, call.request);
      const handler = entry.handler;
      context.principal = await this.admit(entry.operation, context.request);
      const result = await withTraceContext(context.span?.context ?? context.call.trace, () => handler.handle(context.call, request));
      const message = this.writeResponse(responseType, result);
      callback(null, message);
    } catch (e) {
      const error = this.toServiceError(e, context.call.requestId, method);
      code = error.code;
      callback(error);
    } finally {
      context.dispose();
      this.finish(method, code, started, context);
    }
  }

  private async serveStream(method: EngineMethodName, requestType: string, responseType: string, call: grpc.ServerWritableStream<unknown, unknown>): Promise<void> {
    const started = process.hrtime.bigint();
    this.metrics.started(method);
    const context = this.context(method, call);
    let code: number = GrpcStatus.OK;
    try {
      const entry = this.handlers.get(method);
      if (!entry || entry.handler.kind !== 'server-stream') throw new MethodNotServedError(method);
      const request = this.readRequest(requestType, call.request);
      const handler = entry.handler;
      context.principal = await this.admit(entry.operation, context.request);
      const send = async (body: unknown): Promise<void> => {
        if (context.call.signal.aborted) throw this.stopping.signal.aborted ? new ListenerStoppingError() : new ClientGoneError();
        const message = this.writeResponse(responseType, body);
        this.metrics.sent(method);
        if (!call.write(message)) await drained(call, context.call.signal);
      };
      await withTraceContext(context.span?.context ?? context.call.trace, () => handler.handle(context.call, request, send));
      if (context.call.signal.aborted && !call.cancelled) throw new ListenerStoppingError();
      if (call.cancelled) code = GrpcStatus.CANCELLED;
      else call.end();
    } catch (e) {
      if (call.cancelled || e instanceof ClientGoneError) {
        // The client tore the stream down: nothing to answer, and nothing it started is touched.
        code = GrpcStatus.CANCELLED;
      } else {
        const error = this.toServiceError(e, context.call.requestId, method);
        code = error.code;
        call.emit('error', error);
      }
    } finally {
      context.dispose();
      this.finish(method, code, started, context);
    }
  }

  /** The per-call state: what the handler sees (EngineCall) and what the guard reads (a request). */
  private context(method: EngineMethodName, call: AnyCall): CallState {
    const md = call.metadata;
    const given = md.get('x-request-id');
    const requestId = given.length === 1 && typeof given[0] === 'string' && REQUEST_ID.test(given[0]) ? given[0] : randomUUID();
    const single = (name: string): string | undefined => {
      const values = md.get(name);
      if (values.length > 1) throw new ValidationError(`Send one ${name} metadata entry.`, { header: name });
      const v = values[0];
      return v === undefined ? undefined : typeof v === 'string' ? v : v.toString('utf8');
    };
    const text = (name: string): string[] => md.get(name).filter((v): v is string => typeof v === 'string');
    // Aborted when the client cancels or the listener stops: handlers stop their work, never the run.
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    call.on('cancelled', onAbort);
    const stopping = this.stopping.signal;
    stopping.addEventListener('abort', onAbort);
    const pipe = this.pipe;
    const state: CallState = {
      principal: undefined,
      request: { id: requestId, ip: peerAddress(call.getPeer()), method: '', url: '', headers: {}, metadata: md } as unknown as GuardRequest,
      call: undefined as unknown as EngineCall,
      dispose() {
        call.removeListener('cancelled', onAbort);
        stopping.removeEventListener('abort', onAbort);
      },
    };
    state.call = {
      method,
      get principal() {
        return state.principal;
      },
      requestId,
      metadata: md,
      trace: parseTraceContext(text('traceparent')[0], text('tracestate').join(',') || undefined),
      signal: abort.signal,
      header: single,
      async validate<T extends object>(dto: Type<T>, value: unknown, where: 'body' | 'query'): Promise<T> {
        return (await pipe.transform(value, { type: where, metatype: dto })) as T;
      },
      requirePrincipal(): Principal {
        if (!state.principal) throw new InvariantViolation(`${method}: no principal (the method's REST operation is public)`);
        return state.principal;
      },
    };
    state.span = startSpan(`${ENGINE_SERVICE}/${method}`, {
      kind: 'server',
      parent: state.call.trace ?? null,
      attributes: { 'rpc.system': 'grpc', 'rpc.service': ENGINE_SERVICE, 'rpc.method': method },
    });
    return state;
  }

  /** REST JSON form of the request message; what cannot be read is 400 validation_error, as a malformed body is. */
  private readRequest(type: string, message: unknown): JsonObject {
    if (message instanceof UnreadableRequest) {
      throw new ValidationError(
        /nesting depth/.test(message.reason)
          ? `The request message nests deeper than protobuf's ${NESTING_LIMIT} message levels (in a Struct, about ${Math.floor((NESTING_LIMIT - 2) / 2)} levels of JSON).`
          : `The request message cannot be decoded: ${message.reason}.`,
      );
    }
    let json: JsonObject;
    try {
      json = this.codec.toJson(type, message);
    } catch (e) {
      if (e instanceof ProtoJsonError) throw new ValidationError(`The request message cannot be read: ${e.message}`, { path: e.path || '/' });
      if (e instanceof RangeError) throw new ValidationError('The request message is nested too deeply.');
      throw e;
    }
    assertJsonWithinLimits(json, this.config.json);
    const forbidden = prototypeKey(json);
    // REST's JSON parser refuses these keys (prototype poisoning); a Struct must not smuggle them in.
    if (forbidden) throw new ValidationError('The request message has a member the host refuses (__proto__, or constructor.prototype).', { path: forbidden });
    return json;
  }

  private writeResponse(type: string, body: unknown): Record<string, unknown> {
    return this.codec.fromJson(type, body);
  }

  /**
   * The host's AuthGuard, run for the REST route this method stands for: the same seam gate,
   * authentication, rate limits and scope check, in the same order, with the same errors.
   */
  private async admit(op: ResolvedOperation, request: GuardRequest): Promise<Principal | undefined> {
    const values = request.metadata.get('authorization');
    if (values.length > 1) throw new UnauthenticatedError('Send one authorization metadata entry.');
    const authorization = typeof values[0] === 'string' ? values[0] : undefined;
    const mutable = request as unknown as { method: string; url: string; headers: Record<string, string> };
    mutable.method = op.httpMethod;
    mutable.url = op.path;
    mutable.headers = authorization === undefined ? {} : { authorization };
    const ctx = new ExecutionContextHost([request, undefined, undefined], op.op.controller, op.handlerFn);
    ctx.setType('http');
    if (!(await this.guard.canActivate(ctx))) throw new ForbiddenError();
    return request.principal;
  }

  private toServiceError(e: unknown, requestId: string, method: string): grpc.ServiceError {
    const { status, body, headers } = toEnvelope(e, requestId);
    if (status >= 500 && !(e instanceof MethodNotServedError) && !(e instanceof ListenerStoppingError)) {
      this.log.error({ msg: 'grpc call failed', err: e, correlationId: requestId, method: `${ENGINE_SERVICE}/${method}` });
    }
    const rpc = errorEnvelopeToStatus(body, { httpStatus: status });
    const metadata = new (require('@grpc/grpc-js') as typeof import('@grpc/grpc-js')).Metadata();
    metadata.set('grpc-status-details-bin', encodeRpcStatus(this.statusRoot, rpc));
    const retryAfter = headers?.['Retry-After'];
    if (retryAfter !== undefined) metadata.set('retry-after', retryAfter);
    return Object.assign(new Error(rpc.message), { code: rpc.code, details: rpc.message, metadata });
  }

  private finish(method: EngineMethodName, code: number, started: bigint, context: CallState): void {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    this.metrics.finished(method, code, seconds);
    if (context.span) {
      context.span.setAttributes({ 'rpc.grpc.status_code': code });
      // Server errors only (semantic conventions): a refused request is the caller's.
      if (SERVER_FAULTS.has(code)) context.span.fail(grpcStatusName(code) ?? String(code));
      context.span.end();
    }
    const p = context.principal;
    const fields = {
      transport: 'grpc',
      method: `${ENGINE_SERVICE}/${method}`,
      code: grpcStatusName(code) ?? String(code),
      durationMs: Math.round(seconds * 10_000) / 10,
      tenant: p?.tenant ?? null,
      workspace: p?.workspace,
      principal: p?.principal ?? null,
      credential: p?.kind,
      requestId: context.call.requestId,
      traceId: context.call.trace?.traceId,
    };
    if (code === GrpcStatus.INTERNAL || code === GrpcStatus.UNKNOWN) this.log.error({ msg: 'grpc call completed', ...fields });
    else this.log.log({ msg: 'grpc call completed', ...fields });
  }
}

/** The request object the AuthGuard reads: a REST request reduced to what the guard uses. */
type GuardRequest = PrincipalRequest & { metadata: grpc.Metadata };

interface CallState {
  principal: Principal | undefined;
  request: GuardRequest;
  call: EngineCall;
  /** The call's server span while tracing is on (a child of the caller's `traceparent`). */
  span?: SpanHandle;
  dispose(): void;
}

class ClientGoneError extends Error {}

const SERVER_FAULTS: ReadonlySet<number> = new Set([GrpcStatus.UNKNOWN, GrpcStatus.DEADLINE_EXCEEDED, GrpcStatus.UNIMPLEMENTED, GrpcStatus.INTERNAL, GrpcStatus.UNAVAILABLE, GrpcStatus.DATA_LOSS]);

/** A request message that did not decode (see `definition`). */
class UnreadableRequest {
  constructor(readonly reason: string) {}
}

/** protobufjs' decoding limit, protoc's default: messages nested deeper do not decode. */
const NESTING_LIMIT = 100;

/** The JSON Pointer of the first `__proto__` member, or `constructor` member holding `prototype`, if any. */
function prototypeKey(root: unknown): string | undefined {
  const stack: Array<{ v: unknown; at: string }> = [{ v: root, at: '' }];
  while (stack.length) {
    const { v, at } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      v.forEach((item, i) => stack.push({ v: item, at: `${at}/${i}` }));
      continue;
    }
    for (const key of Object.keys(v)) {
      const child = (v as Record<string, unknown>)[key];
      const here = `${at}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if (key === '__proto__') return here;
      if (key === 'constructor' && child !== null && typeof child === 'object' && Object.prototype.hasOwnProperty.call(child, 'prototype')) return here;
      stack.push({ v: child, at: here });
    }
  }
  return undefined;
}

/** The REST twin of a method, with its scope declarations read and checked as the AuthGuard will enforce them (exported for its unit test). */
export function resolveOperation(handler: EngineMethodHandler): ResolvedOperation {
  const { controller, handler: name } = handler.rest;
  const fn = (controller.prototype as Record<string, unknown>)[name];
  if (typeof fn !== 'function') throw new WiringFault(`${ENGINE_SERVICE}/${handler.name}: ${controller.name}.${name} is not a route handler`);
  const verb = Reflect.getMetadata(METHOD_METADATA, fn) as RequestMethod | undefined;
  const path = Reflect.getMetadata(PATH_METADATA, fn) as string | string[] | undefined;
  if (verb === undefined || path === undefined) throw new WiringFault(`${ENGINE_SERVICE}/${handler.name}: ${controller.name}.${name} is not a route handler`);
  // Read as the AuthGuard reads them (Reflector.getAllAndOverride): the handler's, else the controller's.
  const declaredOn = <T>(key: string): T | undefined => (Reflect.getMetadata(key, fn) ?? Reflect.getMetadata(key, controller)) as T | undefined;
  const where = `${ENGINE_SERVICE}/${handler.name}: ${controller.name}.${name}`;
  const scopes = declaredOn<unknown>(SCOPES_KEY);
  const anyOf = declaredOn<unknown>(SCOPES_ANY_KEY);
  const isPublic = declaredOn<unknown>(PUBLIC_KEY) === true;
  const isSeam = declaredOn<unknown>(SEAM_KEY) === true;
  if (scopes === undefined && !isPublic && !isSeam) throw new WiringFault(`${where} declares no scopes`);
  if (scopes !== undefined && !isScopeList(scopes)) throw new WiringFault(`${where} declares malformed scopes`);
  // The guard checks @AnyScope after @Scopes, for an authenticated caller only. The twin's any-of
  // rule must hold over gRPC too, so a list the guard could not enforce stops the start (fail
  // closed): an empty or malformed list, or one on a public route (never checked there).
  if (anyOf !== undefined) {
    if (!isScopeList(anyOf) || anyOf.length === 0) throw new WiringFault(`${where} declares a malformed any-of scope list`);
    if (isPublic && !isSeam) throw new WiringFault(`${where} is public and declares any-of scopes, which the guard would not check`);
    if (scopes === undefined) throw new WiringFault(`${where} declares any-of scopes without @Scopes`);
  }
  return {
    op: handler.rest,
    handlerFn: fn as ResolvedOperation['handlerFn'],
    httpMethod: RequestMethod[verb],
    path: Array.isArray(path) ? path[0] : path,
    scopes: isPublic && !isSeam ? [] : ((scopes as string[] | undefined) ?? []),
    ...(anyOf !== undefined ? { anyOfScopes: anyOf as string[] } : {}),
  };
}

function isScopeList(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((s) => typeof s === 'string' && s.length > 0);
}

/** Resolves when the stream's buffer has room again (or the call ends). */
function drained(call: grpc.ServerWritableStream<unknown, unknown>, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      call.removeListener('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    call.once('drain', done);
    signal.addEventListener('abort', done);
  });
}
