/**
 * Stored event payloads are served in jsonb's key order (src/platform/events/jsonb-order.ts): the order is checked
 * against the database's own jsonb, and a stored event read back keeps the order jsonb gave it before the lean store.
 */
import { DataSource } from 'typeorm';
import { jsonbOrder } from '../../src/platform/events/jsonb-order';
import { createTestApp, TestApp } from '../support/test-app';
import { waitForStatus } from '../runs/run-kit';

const VALUES: unknown[] = [
  { runId: 'r', workflowId: 'w', inputs: { b: 1, a: 2, aa: 3, B: 4 }, owner: { tenant: 't', principal: 'p' } },
  { zeta: [{ y: 1, x: 2 }, 3, null, 'z'], alpha: true, é: 1, e: 2, ee: 3, '': 0, '10': 1, '9': 2 },
  { nested: { deeper: { k2: 1, k10: 2, k1: 3 } }, list: [[{ b: 1, a: 1 }]] },
  [1, 'two', { b: 2, a: 1 }],
  'text',
  42,
  null,
];

describe('events: payloads in jsonb key order', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('orders keys as the database\'s jsonb does, at every depth, arrays untouched, values kept', async () => {
    const ds = t.app.get(DataSource);
    for (const v of VALUES) {
      const [{ j }] = (await ds.query('SELECT $1::jsonb::text AS j', [JSON.stringify(v)])) as Array<{ j: string }>;
      expect(JSON.stringify(jsonbOrder(v))).toBe(JSON.stringify(JSON.parse(j)));
      expect(jsonbOrder(v)).toEqual(v);
    }
  });

  it('a stored event is read back (poll, JSON list) with its payload keys in jsonb order', async () => {
    const key = await t.key({ scopes: ['runs:create', 'runs:read'] });
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance-noop', inputs: { zz: 1, a: { y: 2, b: 3 } } } });
    expect(r.status).toBe(201);
    await waitForStatus(t, key, r.body.runId, ['completed']);
    const poll = await t.http('GET', `/v1/runs/${r.body.runId}/events/poll?lastSequence=0`, { token: key });
    const list = await t.http('GET', `/v1/runs/${r.body.runId}/events`, { token: key, headers: { accept: 'application/json' } });
    for (const body of [poll.text, list.text]) {
      const events = (JSON.parse(body) as { events: Array<{ payload: unknown }> }).events;
      expect(events.length).toBeGreaterThan(1);
      for (const e of events) expect(JSON.stringify(e.payload)).toBe(JSON.stringify(jsonbOrder(e.payload)));
    }
  });
});
