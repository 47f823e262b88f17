/**
 * The gRPC listener: TLS modes (a plaintext client is refused where TLS is required), live event
 * streams (in order while the run is in flight; a client that goes away never cancels the run),
 * the grpc.health.v1 service, reflection, graceful shutdown with the host, and the discovery
 * advertisement present only while the listener is live.
 */
import * as fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { ConfigError, loadHostConfig } from '../../src/platform/config/host-config';
import { GrpcListener } from '../../src/transport/grpc/grpc-listener';
import { installChains, noopChain, waitForStatus } from '../runs/run-kit';
import { createTestApp } from '../support/test-app';
import { createGrpcTestApp, Engine, eventually, GrpcTestApp, metadata, selfSignedCertificate } from './grpc-kit';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const PACED = {
  nodes: [
    { id: 'first', typeId: 'core.noop', config: { v: 1 } },
    { id: 'wait1', typeId: 'core.delay', config: { ms: 600 } },
    { id: 'middle', typeId: 'core.noop', config: { v: 2 } },
    { id: 'wait2', typeId: 'core.delay', config: { ms: 600 } },
    { id: 'last', typeId: 'core.noop', config: { v: 3 } },
  ],
  edges: [
    { from: 'first', to: 'wait1' },
    { from: 'wait1', to: 'middle' },
    { from: 'middle', to: 'wait2' },
    { from: 'wait2', to: 'last' },
  ],
};

const healthDefinition = protoLoader.loadSync(healthProtoPath, { keepCase: true, longs: String, enums: String, defaults: true });
const HealthClient = (grpc.loadPackageDefinition(healthDefinition) as Json).grpc.health.v1.Health as grpc.ServiceClientConstructor;

function healthCheck(target: string, serviceName: string): Promise<string> {
  const client = new HealthClient(target, grpc.credentials.createInsecure()) as Json;
  return new Promise((resolve, reject) => {
    client.Check({ service: serviceName }, { deadline: Date.now() + 5000 }, (err: grpc.ServiceError | null, res: { status: string }) => {
      client.close();
      if (err) reject(err);
      else resolve(res.status);
    });
  });
}

describe('gRPC listener: live streams, health, shutdown, discovery', () => {
  let g: GrpcTestApp;
  let token: string;

  beforeAll(async () => {
    g = await createGrpcTestApp({ env: { OPENWOP_GRPC_REFLECTION: 'true', OPENWOP_GRPC_SHUTDOWN_GRACE_MS: '2000' } });
    token = await g.t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    await installChains(g.t, 'default', 'vendor.test.grpc', { 'vendor.test.grpc.paced': PACED, 'vendor.test.grpc.chain': noopChain(2) });
  });

  afterAll(async () => {
    await g?.close();
  });

  it('a stream opened while the run is in flight delivers its events live, in order, and closes with OK after the terminal one', async () => {
    const created = await g.engine.call('CreateRun', { workflowId: 'vendor.test.grpc.paced' }, metadata(token));
    if (!created.ok) throw new Error(JSON.stringify(created.error));
    const runId = created.body.runId;
    const arrivals: Array<{ type: string; at: number }> = [];
    const s = g.engine.stream({ runId, streamModes: ['debug'] }, metadata(token), (m) => arrivals.push({ type: m.type, at: Date.now() }));
    expect(await s.done).toEqual({ code: grpc.status.OK });
    const seq = s.messages.map((m: Json) => m.sequence);
    expect(seq).toEqual(seq.map((_: number, i: number) => i + 1));
    expect(s.messages[s.messages.length - 1].type).toBe('run.completed');
    // Live, not replayed at the end: the events arrive in bursts, paced by the run's 600 ms delays.
    const gaps = arrivals.slice(1).map((a, i) => a.at - arrivals[i].at);
    expect(gaps.filter((gap) => gap >= 300).length).toBeGreaterThanOrEqual(1);
    const rest = await g.t.http('GET', `/v1/runs/${runId}/events/poll?lastSequence=0`, { token });
    expect(s.messages).toEqual(rest.body.events);
  });

  it('a client that cancels its stream mid-run ends only its stream: the run goes on to completion', async () => {
    const created = await g.engine.call('CreateRun', { workflowId: 'vendor.test.grpc.paced' }, metadata(token));
    if (!created.ok) throw new Error(JSON.stringify(created.error));
    const runId = created.body.runId;
    let cancelledAt = 0;
    const s = g.engine.stream({ runId, streamModes: ['debug'] }, metadata(token), (m, call) => {
      if (m.type === 'node.started' && !cancelledAt) {
        cancelledAt = m.sequence;
        call.cancel();
      }
    });
    expect((await s.done).code).toBe(grpc.status.CANCELLED);
    expect(cancelledAt).toBeGreaterThan(0);
    const done = await waitForStatus(g.t, token, runId, ['completed', 'failed', 'cancelled']);
    expect(done.status).toBe('completed');
    // The server saw the cancellation (the call is counted as CANCELLED, no longer in flight).
    await eventually('the stream to be closed on the server', async () => {
      const text = (await g.t.http('GET', '/metrics', { token: await g.t.key({ scopes: ['metrics:read'] }) })).text;
      return /openwop_grpc_requests_in_flight\{method="StreamRunEvents"\} 0/.test(text) && /openwop_grpc_requests_total\{method="StreamRunEvents",code="CANCELLED"\} [1-9]/.test(text) ? true : undefined;
    });
    // Resuming where the client stopped gives the rest of the run.
    const resumed = g.engine.stream({ runId, lastSequence: cancelledAt }, metadata(token));
    expect(await resumed.done).toEqual({ code: grpc.status.OK });
    expect(resumed.messages[0].sequence).toBe(cancelledAt + 1);
    expect(resumed.messages[resumed.messages.length - 1].type).toBe('run.completed');
  });

  it('grpc.health.v1 answers SERVING for the host and for openwop.v1.Engine; an unknown service is NOT_FOUND', async () => {
    expect(await healthCheck(g.target, '')).toBe('SERVING');
    expect(await healthCheck(g.target, 'openwop.v1.Engine')).toBe('SERVING');
    await expect(healthCheck(g.target, 'no.such.Service')).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
  });

  it('server reflection, when enabled, lists openwop.v1.Engine', async () => {
    const reflectionProto = require.resolve('@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto');
    const def = protoLoader.loadSync(reflectionProto, { keepCase: true, defaults: true });
    const Reflection = (grpc.loadPackageDefinition(def) as Json).grpc.reflection.v1.ServerReflection as grpc.ServiceClientConstructor;
    const client = new Reflection(g.target, grpc.credentials.createInsecure()) as Json;
    const services = await new Promise<string[]>((resolve, reject) => {
      const call = client.ServerReflectionInfo();
      call.on('data', (m: Json) => {
        resolve(m.list_services_response.service.map((x: { name: string }) => x.name));
        call.end();
      });
      call.on('error', reject);
      call.write({ list_services: '' });
    });
    client.close();
    expect(services).toContain('openwop.v1.Engine');
  });

  it('on shutdown: discovery stops advertising gRPC, health turns NOT_SERVING, an open stream ends UNAVAILABLE, the port closes', async () => {
    const created = await g.engine.call('CreateRun', { workflowId: 'vendor.test.grpc.paced' }, metadata(token));
    if (!created.ok) throw new Error(JSON.stringify(created.error));
    let started!: () => void;
    const opened = new Promise<void>((r) => (started = r));
    const s = g.engine.stream({ runId: created.body.runId }, metadata(token), () => started());
    await opened;
    const health = new HealthClient(g.target, grpc.credentials.createInsecure()) as Json;
    const watched: string[] = [];
    const watch = health.Watch({ service: 'openwop.v1.Engine' });
    watch.on('data', (m: { status: string }) => watched.push(m.status));
    watch.on('error', () => undefined);
    await eventually('the health watch to report', () => (watched.length ? true : undefined));
    const stopped = g.listener.stop();
    const ended = await s.done;
    expect([ended.code, ended.error?.envelope?.error]).toEqual([grpc.status.UNAVAILABLE, 'unavailable']);
    await stopped;
    health.close();
    expect(watched).toEqual(['SERVING', 'NOT_SERVING']);
    const doc = await g.t.http('GET', '/.well-known/openwop');
    expect(doc.body.grpc).toBeUndefined();
    expect(doc.body.supportedTransports).toBeUndefined();
    expect(doc.body.capabilities.grpc).toBeUndefined();
    const late = new Engine(g.target);
    const r = await late.call('GetCapabilities', {}, new grpc.Metadata(), 2000);
    late.close();
    expect(r.ok ? 'answered' : r.error.code).toBe(grpc.status.UNAVAILABLE);
    // The run itself was not touched by the listener stopping.
    expect((await waitForStatus(g.t, token, created.body.runId, ['completed', 'failed', 'cancelled'])).status).toBe('completed');
  });
});

describe('gRPC listener: TLS', () => {
  const tls = selfSignedCertificate();
  /** The certificate names localhost; the channel dials 127.0.0.1. */
  const TLS_CLIENT = { 'grpc.ssl_target_name_override': 'localhost', 'grpc.default_authority': 'localhost' };

  afterAll(() => fs.rmSync(tls.dir, { recursive: true, force: true }));

  it('required: a TLS client is served (endpoint grpcs://); a plaintext client is refused', async () => {
    const g = await createGrpcTestApp({ env: { OPENWOP_GRPC_TLS: 'required', OPENWOP_GRPC_TLS_CERT: tls.cert, OPENWOP_GRPC_TLS_KEY: tls.key } }, grpc.credentials.createSsl(tls.certPem), TLS_CLIENT);
    try {
      const secure = await g.engine.call('GetCapabilities', {});
      expect(secure.ok && secure.body.grpc).toEqual({ supported: true, endpoint: `grpcs://127.0.0.1:${g.port}`, service: 'openwop.v1.Engine', tls: 'required' });
      const plain = new Engine(g.target);
      const r = await plain.call('GetCapabilities', {}, new grpc.Metadata(), 3000);
      plain.close();
      expect(r.ok ? 'answered' : r.error.code).toBe(grpc.status.UNAVAILABLE);
    } finally {
      await g.close();
    }
  });

  it('optional: TLS and plaintext clients are both served on the one port', async () => {
    const g = await createGrpcTestApp({ env: { OPENWOP_GRPC_TLS: 'optional', OPENWOP_GRPC_TLS_CERT: tls.cert, OPENWOP_GRPC_TLS_KEY: tls.key } }, grpc.credentials.createSsl(tls.certPem), TLS_CLIENT);
    try {
      const token = await g.t.key({ scopes: ['runs:read'] });
      const secure = await g.engine.call('GetRun', { runId: 'nope' }, metadata(token));
      expect(secure.ok ? 'answered' : secure.error.code).toBe(grpc.status.NOT_FOUND);
      const plain = new Engine(g.target);
      const r = await plain.call('GetCapabilities', {});
      plain.close();
      expect(r.ok && r.body.grpc).toEqual({ supported: true, endpoint: `grpcs://127.0.0.1:${g.port}`, service: 'openwop.v1.Engine', tls: 'optional' });
    } finally {
      await g.close();
    }
  });

  it('settings are checked at start, each refusal one line naming the variable', () => {
    const base = { OPENWOP_GRPC_PORT: '0' };
    const refuse = (env: Record<string, string>) => {
      try {
        loadHostConfig({ ...base, ...env });
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        expect((e as Error).message).not.toContain('\n');
        return (e as Error).message;
      }
      throw new Error(`accepted ${JSON.stringify(env)}`);
    };
    expect(refuse({ OPENWOP_GRPC_PORT: '70000' })).toMatch(/^OPENWOP_GRPC_PORT must be a port number/);
    expect(refuse({ OPENWOP_GRPC_TLS: 'sometimes' })).toMatch(/^OPENWOP_GRPC_TLS must be disabled, optional or required/);
    expect(refuse({ OPENWOP_GRPC_TLS: 'required' })).toMatch(/needs OPENWOP_GRPC_TLS_CERT and OPENWOP_GRPC_TLS_KEY/);
    expect(refuse({ OPENWOP_GRPC_TLS_CERT: tls.cert })).toMatch(/go together/);
    expect(refuse({ OPENWOP_GRPC_TLS_CERT: `${tls.dir}/missing.pem`, OPENWOP_GRPC_TLS_KEY: tls.key })).toMatch(/^OPENWOP_GRPC_TLS_CERT: cannot read .*missing\.pem: no such file$/);
    expect(refuse({ OPENWOP_GRPC_TLS_CERT: tls.key, OPENWOP_GRPC_TLS_KEY: tls.key })).toMatch(/^OPENWOP_GRPC_TLS_CERT: .* is not a PEM certificate/);
    expect(refuse({ OPENWOP_GRPC_TLS_CERT: tls.cert, OPENWOP_GRPC_TLS_KEY: tls.cert })).toMatch(/^OPENWOP_GRPC_TLS_KEY: .* is not a PEM private key/);
    const other = selfSignedCertificate();
    try {
      expect(refuse({ OPENWOP_GRPC_TLS_CERT: tls.cert, OPENWOP_GRPC_TLS_KEY: other.key })).toMatch(/is not the private key of the certificate/);
    } finally {
      fs.rmSync(other.dir, { recursive: true, force: true });
    }
    expect(refuse({ OPENWOP_GRPC_ENDPOINT: 'http://x:1' })).toMatch(/^OPENWOP_GRPC_ENDPOINT must be a grpc:\/\/host:port/);
    expect(refuse({ OPENWOP_GRPC_ENDPOINT: 'grpc://api.example.test:443', OPENWOP_GRPC_TLS_CERT: tls.cert, OPENWOP_GRPC_TLS_KEY: tls.key })).toMatch(/advertise grpcs:\/\//);
    expect(refuse({ OPENWOP_GRPC_REFLECTION: 'maybe' })).toMatch(/^OPENWOP_GRPC_REFLECTION must be true or false/);

    expect(loadHostConfig({ OPENWOP_GRPC_TLS_CERT: tls.cert, OPENWOP_GRPC_TLS_KEY: tls.key, OPENWOP_GRPC_PORT: '50051' }).grpc).toMatchObject({ enabled: true, port: 50051, tls: 'required', reason: 'port' });
    expect(loadHostConfig({}).grpc).toMatchObject({ enabled: false, reason: 'unset', tls: 'disabled' });
    expect(loadHostConfig({ OPENWOP_TEST_SEAMS: 'true' }).grpc).toMatchObject({ enabled: true, port: 0, reason: 'test-seams' });
    expect(loadHostConfig({ OPENWOP_TEST_SEAMS: 'true', OPENWOP_GRPC_PORT: 'off' }).grpc).toMatchObject({ enabled: false, reason: 'off' });
    expect(loadHostConfig({ HOST: '0.0.0.0', OPENWOP_GRPC_PORT: '0' }).grpc.host).toBe('0.0.0.0');
  });
});

describe('gRPC listener: a host that does not start it', () => {
  it('advertises no gRPC transport and holds no port', async () => {
    const t = await createTestApp({ env: { OPENWOP_GRPC_PORT: '0' } });
    try {
      const doc = await t.http('GET', '/.well-known/openwop');
      expect(doc.body.grpc).toBeUndefined();
      expect(doc.body.supportedTransports).toBeUndefined();
      expect(t.app.get(GrpcListener).address()).toBeUndefined();
    } finally {
      await t.close();
    }
  });
});
