/** A gRPC client of openwop.v1.Engine for the tests, speaking REST JSON bodies through the project's codec. */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { ServiceDefinition } from '@grpc/proto-loader';
import { ENGINE_SERVICE, engineJsonCodec, loadEnginePackageDefinition, loadEngineRoot } from '../../src/transport/grpc/engine-proto';
import { decodeRpcStatus, ErrorEnvelope, errorEnvelopeFromStatus } from '../../src/transport/grpc/error-status';
import { GrpcListener } from '../../src/transport/grpc/grpc-listener';
import { createTestApp, TestApp, TestAppOptions } from '../support/test-app';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const definition = loadEnginePackageDefinition();
const service = definition[ENGINE_SERVICE] as ServiceDefinition;
const codec = engineJsonCodec();
const statusRoot = loadEngineRoot();
export const EngineClient = grpc.makeGenericClientConstructor(service as unknown as grpc.ServiceDefinition, 'Engine');

const engineService = statusRoot.lookupService(ENGINE_SERVICE);

/** A method's request or response type by full name, from the proto (UnregisterWebhook answers google.protobuf.Empty). */
function typeOf(method: string, part: 'request' | 'response'): string {
  const m = engineService.methods[method];
  const t = part === 'request' ? m.resolvedRequestType : m.resolvedResponseType;
  return t!.fullName.replace(/^\./, '');
}

/** What a failed call carried: its code, message, the envelope in details[] and the trailers. */
export interface CallFailure {
  code: number;
  message: string;
  envelope?: ErrorEnvelope;
  metadata: grpc.Metadata;
}

export function failure(e: grpc.ServiceError): CallFailure {
  const bin = e.metadata?.get('grpc-status-details-bin')[0];
  const status = bin instanceof Buffer ? decodeRpcStatus(statusRoot, bin) : undefined;
  if (status) expect(status.code).toBe(e.code);
  return { code: e.code, message: e.details, envelope: status ? errorEnvelopeFromStatus(status) : undefined, metadata: e.metadata };
}

export function metadata(token?: string, extra: Record<string, string | string[]> = {}): grpc.Metadata {
  const md = new grpc.Metadata();
  if (token !== undefined) md.set('authorization', `Bearer ${token}`);
  for (const [k, v] of Object.entries(extra)) for (const x of Array.isArray(v) ? v : [v]) md.add(k, x);
  return md;
}

export type UnaryResult = { ok: true; body: Json } | { ok: false; error: CallFailure };

export class Engine {
  readonly client: grpc.Client & Record<string, (...args: unknown[]) => unknown>;

  constructor(target: string, credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(), options: grpc.ChannelOptions = {}) {
    this.client = new EngineClient(target, credentials, options) as unknown as Engine['client'];
  }

  /** A unary call with a REST JSON request body; the answer as its REST JSON body. */
  call(method: string, body: Json, md: grpc.Metadata = new grpc.Metadata(), deadlineMs = 20_000): Promise<UnaryResult> {
    const message = codec.fromJson(typeOf(method, 'request'), body);
    return new Promise((resolve) => {
      this.client[method](message, md, { deadline: Date.now() + deadlineMs }, (err: grpc.ServiceError | null, res: unknown) => {
        if (err) resolve({ ok: false, error: failure(err) });
        else resolve({ ok: true, body: codec.toJson(typeOf(method, 'response'), res) });
      });
    });
  }

  /** StreamRunEvents: every message (REST JSON form) and how the stream ended. */
  stream(body: Json, md: grpc.Metadata = new grpc.Metadata(), onMessage?: (m: Json, call: grpc.ClientReadableStream<unknown>) => void) {
    const call = this.client.StreamRunEvents(codec.fromJson(typeOf('StreamRunEvents', 'request'), body), md) as grpc.ClientReadableStream<unknown>;
    const messages: Json[] = [];
    const done = new Promise<{ code: number; error?: CallFailure }>((resolve) => {
      call.on('data', (m: unknown) => {
        const json = codec.toJson(typeOf('StreamRunEvents', 'response'), m);
        messages.push(json);
        onMessage?.(json, call);
      });
      call.on('error', (e: grpc.ServiceError) => resolve({ code: e.code, error: failure(e) }));
      call.on('status', (s: grpc.StatusObject) => {
        if (s.code === grpc.status.OK) resolve({ code: s.code });
      });
    });
    return { call, messages, done };
  }

  close(): void {
    this.client.close();
  }
}

export interface GrpcTestApp {
  t: TestApp;
  listener: GrpcListener;
  port: number;
  target: string;
  engine: Engine;
  close(): Promise<void>;
}

/** A test host with its gRPC listener started on a free loopback port, and a cleartext client of it. */
export async function createGrpcTestApp(options: TestAppOptions = {}, credentials?: grpc.ChannelCredentials, channelOptions: grpc.ChannelOptions = {}): Promise<GrpcTestApp> {
  const t = await createTestApp({ ...options, env: { OPENWOP_GRPC_PORT: '0', OPENWOP_GRPC_HOST: '127.0.0.1', ...options.env } });
  try {
    const listener = t.app.get(GrpcListener);
    const { port } = await listener.start();
    const target = `127.0.0.1:${port}`;
    const engine = new Engine(target, credentials, channelOptions);
    return {
      t,
      listener,
      port,
      target,
      engine,
      async close() {
        engine.close();
        await t.close();
      },
    };
  } catch (e) {
    await t.close();
    throw e;
  }
}

/** A throwaway self-signed certificate for 127.0.0.1 / localhost (openssl), removed with its folder by the caller. */
export function selfSignedCertificate(): { dir: string; cert: string; key: string; certPem: Buffer } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-grpc-tls-'));
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
  return { dir, cert, key, certPem: fs.readFileSync(cert) };
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
