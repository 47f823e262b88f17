/**
 * What a completed 3-node run's events take as stored (issue 41: bytes per run): the run engine's
 * event types as codes, node events without the payload's leading nodeId (migration 1765400000000),
 * no tenant but on tool calls (1765400010000). The rows' own bytes (pg_column_size: a row's header
 * and columns, not the page's line pointers and free space) are a figure that does not move with
 * how the runs were written, unlike the tables' sizes `npm run bench -- growth` reports; the stored
 * form must still give every event back as written.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain, waitForStatus } from './run-kit';

const CHAIN = noopChain(3);

describe('runs: the stored bytes of a run\'s events', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp();
    key = await t.key({ tenant: 'acme', scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'acme', 'vendor.test.bytes', { 'vendor.test.bytes3': CHAIN });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a completed 3-node run stores its 8 events in at most 1,000 bytes of rows, and reads them back whole', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.bytes3' } });
    expect(r.status).toBe(201);
    const runId = r.body.runId as string;
    await waitForStatus(t, key, runId, ['completed']);
    const rows = (await t.ds.query(
      `SELECT pg_column_size(e.*) AS "bytes", e."code", e."type", e."tenant", e."payload"::text AS "payload" FROM "event" e
       WHERE e."stream_key" = (SELECT s."key" FROM "event_stream" s WHERE s."tenant" = 'acme' AND s."stream_id" = $1) ORDER BY e."sequence"`,
      [runId],
    )) as Array<{ bytes: number; code: number; type: string | null; tenant: string | null; payload: string }>;
    expect(rows).toHaveLength(8);
    expect(rows.every((x) => x.type === null && x.tenant === null)).toBe(true);
    expect(rows.filter((x) => x.code & 1024)).toHaveLength(6);
    expect(rows.some((x) => x.payload.includes('"nodeId"'))).toBe(false);
    // 989 here. Before these migrations the growth benchmark's run of this chain (a tenant of 8 characters) took 1,235:
    // the types as text, the tenant on every row, the nodeId in each node payload.
    expect(rows.reduce((n, x) => n + Number(x.bytes), 0)).toBeLessThanOrEqual(1000);

    const events = (await t.http('GET', `/v1/runs/${runId}/events/poll?lastSequence=0&timeout=0`, { token: key })).body.events as Array<{ type: string; nodeId?: string; payload: Record<string, unknown> }>;
    expect(events.map((e) => e.type)).toEqual(['run.started', 'node.started', 'node.completed', 'node.started', 'node.completed', 'node.started', 'node.completed', 'run.completed']);
    for (const e of events.filter((x) => x.type.startsWith('node.'))) expect(e.payload.nodeId).toBe(e.nodeId);
    expect(events[2].payload).toEqual(expect.objectContaining({ nodeId: 'n1', outputs: { step: 1 } }));
  });
});
