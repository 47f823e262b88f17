/**
 * RFC 0053 for webhook deliveries: a delivery that exhausted its retries (read at GET /v1/webhooks/{id}/dead-letters)
 * is sent again from its first attempt (POST /v1/dead-letters/deliveries/{id}/retry) or deleted (DELETE …).
 */
import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain, waitForStatus } from './run-kit';

describe('dead letters: webhook deliveries', () => {
  let t: TestApp;
  let key: string;
  let reader: string;
  let server: http.Server;
  let url: string;
  let answer = 500;
  const hits: Array<{ status: number; runId: string }> = [];

  beforeAll(async () => {
    server = http.createServer((q, s) => {
      let body = '';
      q.on('data', (c) => (body += c));
      q.on('end', () => {
        const runId = (JSON.parse(body || '{}') as { runId?: string }).runId ?? '';
        hits.push({ status: answer, runId });
        s.statusCode = answer;
        s.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    t = await createTestApp({
      env: {
        OPENWOP_CREDENTIAL_KEYS: `k1:${randomBytes(32).toString('base64')}`,
        OPENWOP_WEBHOOK_ALLOW_PRIVATE: 'true',
        OPENWOP_WEBHOOK_ALLOWED_PORTS: '1024-65535',
        OPENWOP_SCHEDULER_ENABLED: 'true',
        OPENWOP_WEBHOOK_POLL_MS: '25',
        OPENWOP_WEBHOOK_RETRY_BASE_MS: '50',
        OPENWOP_WEBHOOK_MAX_ATTEMPTS: '2',
      },
    });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'webhooks:read'] });
    reader = await t.key({ scopes: ['runs:read', 'webhooks:read'] });
    await installChains(t, 'default', 'vendor.test.dl-chains', { 'vendor.test.chain': noopChain(1) });
  });

  afterAll(async () => {
    await t?.close();
    await new Promise((r) => server?.close(r));
  });

  async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
    const end = Date.now() + 20_000;
    for (;;) {
      const v = await read();
      if (ok(v) || Date.now() > end) return v;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('retries a dead-lettered delivery from its first attempt, and purges one', async () => {
    const reg = await t.http('POST', '/v1/webhooks', { token: key, body: { url, events: ['run.completed'] } });
    expect(reg.status).toBe(201);
    const id = reg.body.webhookId as string;
    const letters = () => t.http('GET', `/v1/webhooks/${id}/dead-letters`, { token: reader }).then((r) => r.body.deliveries as Array<Record<string, any>>); // eslint-disable-line @typescript-eslint/no-explicit-any

    const r1 = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.chain' } });
    await waitForStatus(t, key, r1.body.runId, ['completed']);
    const [dead] = await until(letters, (l) => l.length === 1);
    expect(dead).toMatchObject({ runId: r1.body.runId, attempts: 2, lastStatusCode: 500 });

    expect((await t.http('POST', `/v1/dead-letters/deliveries/${dead.deliveryId}/retry`, { token: reader })).status).toBe(403);
    answer = 200;
    const retried = await t.http('POST', `/v1/dead-letters/deliveries/${dead.deliveryId}/retry`, { token: key });
    expect([retried.status, retried.body]).toEqual([202, { deliveryId: dead.deliveryId, status: 'pending' }]);
    await until(async () => hits.filter((h) => h.runId === r1.body.runId && h.status === 200).length, (n) => n === 1);
    expect(hits.filter((h) => h.runId === r1.body.runId).map((h) => h.status)).toEqual([500, 500, 200]);
    expect(await letters()).toEqual([]);
    // Not dead-lettered (any more): 404.
    expect((await t.http('POST', `/v1/dead-letters/deliveries/${dead.deliveryId}/retry`, { token: key })).status).toBe(404);

    answer = 500;
    const r2 = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.chain' } });
    await waitForStatus(t, key, r2.body.runId, ['completed']);
    const [second] = await until(letters, (l) => l.length === 1);
    expect((await t.http('DELETE', `/v1/dead-letters/deliveries/${second.deliveryId}`, { token: key })).status).toBe(204);
    expect(await letters()).toEqual([]);
    expect((await t.http('DELETE', `/v1/dead-letters/deliveries/${second.deliveryId}`, { token: key })).status).toBe(404);
    const other = await t.key({ tenant: 'other', scopes: ['runs:create', 'webhooks:read'] });
    expect((await t.http('DELETE', `/v1/dead-letters/deliveries/${dead.deliveryId}`, { token: other })).status).toBe(404);
  });
});
