import type { Metadata } from '@grpc/grpc-js';
import type { Type } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { Principal } from '../../platform/identity/principal';
import type { TraceContext } from '../../platform/tracing/trace-context';
import type { JsonObject } from './json-struct';

/** The methods of openwop.v1.Engine: the profile's (grpc-transport.md §"Service definition"), in its order, then this host's additions. */
export const ENGINE_METHODS = [
  'GetCapabilities',
  'GetWorkflow',
  'CreateRun',
  'GetRun',
  'CancelRun',
  'BulkCancelRuns',
  'ForkRun',
  'PauseRun',
  'ResumeRun',
  'StreamRunEvents',
  'ResolveInterruptByRun',
  'ResolveInterruptByToken',
  'InspectInterruptByToken',
  'GetArtifact',
  'RegisterWebhook',
  'UnregisterWebhook',
  'VerifyAuditLog',
  // This host's additions: the collection routes, with their filters and paging.
  'ListRuns',
  'ListTools',
  'ListApprovals',
  'ListWorkflows',
] as const;
export type EngineMethodName = (typeof ENGINE_METHODS)[number];

/**
 * The REST operation a gRPC method is the twin of: the controller class and the name of its route
 * handler. The call pipeline reads that handler's own declarations (`@Scopes`, `@Public`,
 * `@TestSeam`, its HTTP verb for the rate-limit class), so who may call the method, and how often,
 * is decided by the very metadata REST uses.
 */
export interface RestOperation {
  controller: Type<unknown>;
  handler: string;
}

/** What a method handler gets besides its request: who is calling and the call's metadata. */
export interface EngineCall {
  readonly method: EngineMethodName;
  /** The verified principal; undefined only for methods whose REST operation is public. */
  readonly principal: Principal | undefined;
  /** The call's correlation id (`x-request-id` metadata when well formed, else a new UUID). */
  readonly requestId: string;
  readonly metadata: Metadata;
  /** W3C trace context from the caller's `traceparent` / `tracestate` metadata; while the handler runs the current one is the call's span (tracing on) or this. */
  readonly trace: TraceContext | undefined;
  /** Aborted when the client cancels the call or the listener stops. */
  readonly signal: AbortSignal;
  /**
   * A REST request header carried as metadata of the same lower-case name (`idempotency-key`):
   * undefined when absent; sent twice it is malformed (400 validation_error), as REST treats it.
   */
  header(name: string): string | undefined;
  /** Validates a REST body, query or path object with its DTO class, exactly as the REST pipe does. */
  validate<T extends object>(dto: Type<T>, value: unknown, where: 'body' | 'query'): Promise<T>;
  /** The principal, or an error when a handler of an authenticated method runs without one (never expected). */
  requirePrincipal(): Principal;
}

interface EngineMethodBase {
  readonly name: EngineMethodName;
  readonly rest: RestOperation;
}

/**
 * A unary method: the request message as its REST JSON form in, the REST response body out (the
 * transport turns it into the response message). Throw the domain errors REST throws; the
 * transport maps them to google.rpc.Status with the envelope in details[].
 */
export interface UnaryEngineMethod extends EngineMethodBase {
  readonly kind: 'unary';
  handle(call: EngineCall, request: JsonObject): Promise<unknown>;
}

/**
 * A server-streaming method: `send` writes one response message (REST JSON form) and resolves once
 * the stream can take more (backpressure). Returning ends the call with OK.
 */
export interface StreamingEngineMethod extends EngineMethodBase {
  readonly kind: 'server-stream';
  handle(call: EngineCall, request: JsonObject, send: (message: unknown) => Promise<void>): Promise<void>;
}

export type EngineMethodHandler = UnaryEngineMethod | StreamingEngineMethod;

/**
 * Marks a provider as the handler of one Engine method. Serving a method is one provider with this
 * decorator, listed in the gRPC transport module; a method without one answers UNIMPLEMENTED.
 */
export const EngineMethod = DiscoveryService.createDecorator<void>();
