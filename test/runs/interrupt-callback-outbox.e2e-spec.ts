/**
 * Interrupt callbacks through the outbox (docs/interrupts.md "Callback delivery"): a failed POST is
 * retried with backoff until the receiver takes it or the attempts run out, a callback left unsent
 * when the host stops is sent by the next host on the same database, and an interrupt closed before
 * its notification went out is not notified.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { createTestApp, TestApp } from '../support/test-app';
import { waitForStatus } from './run-kit';

const V2 = { 'openwop-version': '2.0' };
const bare = (id: string) => id.slice(id.lastIndexOf('/') + 1);
const ENV = {
  OPENWOP_TEST_SEAMS: 'true',
  OPENWOP_PROTOCOL_MAJORS: '1,2',
  OPENWOP_CALLBACK_ALLOW_PRIVATE: 'true',
  OPENWOP_WEBHOOK_ALLOWED_PORTS: '443,1024-65535',
  OPENWOP_SCHEDULER_ENABLED: 'true',
  OPENWOP_WEBHOOK_POLL_MS: '50',
  OPENWOP_WEBHOOK_RETRY_BASE_MS: '100',
  OPENWOP_WEBHOOK_RETRY_MAX_MS: '200',
  OPENWOP_WEBHOOK_MAX_ATTEMPTS: '3',
};

interface Receiver {
  server: http.Server;
  url: string;
  received: Array<Record<string, unknown>>;
  /** The statuses to answer, in order; 204 once they run out. */
  answers: number[];
  /** When set, answers wait for it (a receiver slow to answer). */
  hold?: Promise<void>;
}

async function receiver(port = 0): Promise<Receiver> {
  const r: Receiver = { server: undefined as unknown as http.Server, url: '', received: [], answers: [] };
  r.server = http.createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      r.received.push(JSON.parse(data));
      const status = r.answers.shift() ?? 204;
      void (r.hold ?? Promise.resolve()).then(() => res.writeHead(status).end());
    });
  });
  await new Promise<void>((ok) => r.server.listen(port, '127.0.0.1', ok));
  r.url = `http://127.0.0.1:${(r.server.address() as AddressInfo).port}/cb`;
  return r;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function outboxRow(t: TestApp, runId: string): Promise<{ status: string; attempts: number; last_error: string | null } | undefined> {
  const [row] = await t.ds.query(`SELECT "status", "attempts", "last_error" FROM "interrupt_callback" WHERE "run_id" = $1`, [runId]);
  return row;
}

async function parkedRun(t: TestApp, key: string, callbackUrl: string): Promise<string> {
  const r = await t.http('POST', '/runs', { token: key, body: { workflowId: 'conformance-interrupt-external-event', callbackUrl }, headers: V2 });
  expect(r.status).toBe(201);
  const runId = bare(r.body.runId as string);
  await waitForStatus(t, key, runId, ['waiting-external']);
  return runId;
}

describe('interrupt callbacks through the outbox', () => {
  let t: TestApp;
  let key: string;
  let rx: Receiver;

  beforeAll(async () => {
    rx = await receiver();
    t = await createTestApp({ env: ENV });
    key = await t.key({ tenant: 'acme', scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
  });
  afterAll(async () => {
    await t?.close();
    rx?.server.close();
  });

  it('retries a refused notification with backoff until the receiver takes it', async () => {
    rx.received.length = 0;
    rx.answers = [503, 500];
    const runId = await parkedRun(t, key, rx.url);
    const row = await until('the callback to be delivered', async () => {
      const r = await outboxRow(t, runId);
      return r?.status === 'delivered' ? r : undefined;
    });
    expect(row).toEqual({ status: 'delivered', attempts: 3, last_error: null });
    expect(rx.received).toHaveLength(3);
    // The same notification every time: one interrupt, one identity.
    expect(new Set(rx.received.map((b) => b.interruptId)).size).toBe(1);
    expect(rx.received[0]).toMatchObject({ type: 'interrupt.requested', runId: `acme/${runId}`, kind: 'external-event' });
  });

  it('gives up after the attempt budget and keeps the last error', async () => {
    rx.received.length = 0;
    rx.answers = [500, 500, 500, 500, 500];
    const runId = await parkedRun(t, key, rx.url);
    const row = await until('the callback to fail', async () => {
      const r = await outboxRow(t, runId);
      return r?.status === 'failed' ? r : undefined;
    });
    expect(row.attempts).toBe(3);
    expect(row.last_error).toMatch(/500/);
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.received).toHaveLength(3);
    rx.answers = [];
  });

  it('does not notify an interrupt that closed before its notification went out', async () => {
    rx.received.length = 0;
    rx.answers = [503];
    // The first attempt is answered (refused) only once the run is cancelled, so its retry finds the interrupt closed.
    let release = () => undefined as void;
    rx.hold = new Promise<void>((r) => (release = r));
    const runId = await parkedRun(t, key, rx.url);
    await until('the first attempt', async () => (rx.received.length ? true : undefined));
    expect((await t.http('POST', `/v1/runs/${runId}/cancel`, { token: key, body: {} })).status).toBeLessThan(300);
    release();
    rx.hold = undefined;
    const row = await until('the callback to become obsolete', async () => {
      const r = await outboxRow(t, runId);
      return r?.status === 'obsolete' ? r : undefined;
    });
    expect(row.last_error).toBe('the interrupt is no longer open');
    expect(rx.received).toHaveLength(1);
  });

  it('writes one row per interrupt however often the run is parked', async () => {
    rx.received.length = 0;
    const runId = await parkedRun(t, key, rx.url);
    await until('delivery', async () => ((await outboxRow(t, runId))?.status === 'delivered' ? true : undefined));
    const [{ n }] = await t.ds.query(`SELECT count(*)::int AS n FROM "interrupt_callback" WHERE "run_id" = $1`, [runId]);
    expect(n).toBe(1);
    expect(rx.received).toHaveLength(1);
  });
});

describe('an unsent interrupt callback outlives its host', () => {
  it('is sent by the next host on the same database', async () => {
    // A port nobody listens on yet: the first host's attempts are refused at connect.
    const probe = await receiver();
    const port = (probe.server.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.server.close(() => r()));
    const first = await createTestApp({ env: { ...ENV, OPENWOP_WEBHOOK_RETRY_BASE_MS: '3000', OPENWOP_WEBHOOK_RETRY_MAX_MS: '3000' } });
    const database = first.databaseName;
    let second: TestApp | undefined;
    let rx: Receiver | undefined;
    try {
      const key = await first.key({ tenant: 'acme', scopes: ['runs:create', 'runs:read'] });
      const runId = await parkedRun(first, key, `http://127.0.0.1:${port}/cb`);
      await until('a refused first attempt', async () => {
        const r = await outboxRow(first, runId);
        return r?.status === 'pending' && r.attempts === 1 ? r : undefined;
      });
      await first.stop();
      rx = await receiver(port);
      second = await createTestApp({ env: ENV, database });
      const row = await until('the second host to deliver', async () => {
        const r = await outboxRow(second!, runId);
        return r?.status === 'delivered' ? r : undefined;
      });
      expect(row.attempts).toBe(2);
      expect(rx.received).toHaveLength(1);
      expect(rx.received[0]).toMatchObject({ runId: `acme/${runId}` });
    } finally {
      // A test that failed before the first host stopped stops it here (a host closes once).
      await first.stop();
      await second?.close();
      rx?.server.close();
      const admin = new Client({ connectionString: process.env.DATABASE_URL });
      await admin.connect();
      if (process.env.OPENWOP_TEST_DB_MODE !== 'embedded') await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      await admin.end();
    }
  });
});
