/**
 * The retention force-expire seam (production-retention-expiry's `OPENWOP_TEST_FORCE_EXPIRE_URL`):
 * a listener on 127.0.0.1 only, opened only with OPENWOP_TEST_SEAMS=true and
 * OPENWOP_TEST_FORCE_EXPIRE_PORT, advertised as `production.retention.testForceExpire` only while it
 * listens. `POST /runs/{runId}/expire` deletes a finished run now with every row the sweep deletes
 * (204; the run then reads as the canonical 404), waits for a run still going and refuses it when it
 * does not finish (409 run_not_terminal), refuses a run a keeper keeps (409 run_kept) and answers an
 * unknown run 404.
 */
import { networkInterfaces } from 'node:os';
import { loadHostConfig } from '../../src/platform/config/host-config';
import { ForceExpireListener } from '../../src/platform/retention/force-expire.listener';
import { createTestApp, TestApp } from '../support/test-app';

async function post(url: string, method = 'POST'): Promise<{ status: number; body: { error?: string; message?: string } | undefined }> {
  const res = await fetch(url, { method });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe('retention force-expire seam', () => {
  it('is refused as a setting that is not a port', () => {
    expect(() => loadHostConfig({ OPENWOP_TEST_FORCE_EXPIRE_PORT: 'x' })).toThrow(/OPENWOP_TEST_FORCE_EXPIRE_PORT must be a TCP port/);
    expect(() => loadHostConfig({ OPENWOP_TEST_FORCE_EXPIRE_PORT: '70000' })).toThrow(/OPENWOP_TEST_FORCE_EXPIRE_PORT must be a TCP port/);
    expect(loadHostConfig({}).forceExpire).toEqual({});
  });

  describe('without the test seams', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'false', OPENWOP_TEST_FORCE_EXPIRE_PORT: '0' } });
    });
    afterAll(async () => {
      await t?.close();
    });

    it('opens no listener and advertises no testForceExpire, whatever the port setting says', async () => {
      expect(t.app.get(ForceExpireListener).port).toBeUndefined();
      const disco = await t.http('GET', '/.well-known/openwop');
      expect(disco.body.production.retention.supported).toBe(true);
      expect(disco.body.production.retention).not.toHaveProperty('testForceExpire');
    });
  });

  describe('with the test seams', () => {
    let t: TestApp;
    let key: string;
    let base: string;
    beforeAll(async () => {
      t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_TEST_FORCE_EXPIRE_PORT: '0', OPENWOP_SCHEDULER_ENABLED: 'false' } });
      key = await t.key({ tenant: 'fx-a', scopes: ['runs:read', 'runs:create'] });
      base = `http://127.0.0.1:${t.app.get(ForceExpireListener).port}`;
    });
    afterAll(async () => {
      await t?.close();
    });

    async function finishedRun(): Promise<string> {
      const create = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance-noop' } });
      expect(create.status).toBe(201);
      return create.body.runId as string;
    }

    it('listens on loopback only and is advertised while it listens', async () => {
      const disco = await t.http('GET', '/.well-known/openwop');
      expect(disco.body.production.retention.testForceExpire).toBe(true);
      expect(disco.body.capabilities.production.retention.testForceExpire).toBe(true);
      const port = t.app.get(ForceExpireListener).port;
      // Every address of this machine but loopback refuses the connection.
      const outside = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal);
      if (outside) await expect(fetch(`http://${outside.address}:${port}/runs/x/expire`, { method: 'POST' })).rejects.toThrow();
    });

    it('deletes a run it has just been asked to start (waiting for it to finish): 204, then the run, its event stream and node rows are gone and it reads as 404', async () => {
      const runId = await finishedRun();
      const res = await post(`${base}/runs/${runId}/expire`);
      expect(res).toEqual({ status: 204, body: undefined });
      const read = await t.http('GET', `/v1/runs/${runId}`, { token: key });
      expect(read.status).toBe(404);
      expect(read.body).toEqual({ error: 'not_found', message: expect.any(String) });
      const left = (await t.ds.query(
        `SELECT (SELECT count(*) FROM "run" WHERE "id" = $1)::int AS runs, (SELECT count(*) FROM "event_stream" WHERE "stream_id" = $1::text)::int AS streams, (SELECT count(*) FROM "run_node" WHERE "run_id" = $1)::int AS nodes`,
        [runId],
      )) as Array<{ runs: number; streams: number; nodes: number }>;
      expect(left).toEqual([{ runs: 0, streams: 0, nodes: 0 }]);
      // A second call finds nothing to expire.
      expect((await post(`${base}/runs/${runId}/expire`)).status).toBe(404);
    });

    it('answers an unknown run, a malformed id, another path 404 and another method 405, each with the canonical envelope', async () => {
      for (const url of [`${base}/runs/00000000-0000-4000-8000-000000000000/expire`, `${base}/runs/not-a-uuid/expire`, `${base}/runs/%E0%A4%A/expire`, `${base}/runs/x`, `${base}/`]) {
        const res = await post(url);
        expect([url, res.status, res.body?.error, typeof res.body?.message]).toEqual([url, 404, 'not_found', 'string']);
      }
      const get = await post(`${base}/runs/00000000-0000-4000-8000-000000000000/expire`, 'GET');
      expect([get.status, get.body?.error]).toEqual([405, 'method_not_allowed']);
    });

    it('never deletes a run still going (409 run_not_terminal after the wait) nor one a pending gate keeps (409 run_kept)', async () => {
      const [{ id: running }] = (await t.ds.query(`INSERT INTO "run" ("tenant", "kind", "status", "metadata") VALUES ('fx-a', 'workflow', 'running', '{}'::jsonb) RETURNING "id"`)) as Array<{ id: string }>;
      t.app.get(ForceExpireListener).waitMs = 200;
      const started = Date.now();
      const res = await post(`${base}/runs/${running}/expire`);
      expect([res.status, res.body?.error]).toEqual([409, 'run_not_terminal']);
      expect(Date.now() - started).toBeGreaterThanOrEqual(200);

      const [{ id: gated }] = (await t.ds.query(`INSERT INTO "run" ("tenant", "kind", "status", "metadata", "completed_at") VALUES ('fx-a', 'workflow', 'completed', '{}'::jsonb, now()) RETURNING "id"`)) as Array<{ id: string }>;
      await t.ds.query(
        `INSERT INTO "approval" ("tenant", "subject_kind", "subject_id", "state", "required_scope", "quorum", "artifact_ref", "requested_by", "expires_at", "run_id", "node_id")
         VALUES ('fx-a', 'run-node', $1, 'pending', 'approvals:respond', 1, $2, 'x', now() + interval '1 day', $1, 'a')`,
        [gated, `run:${gated}#a`],
      );
      const kept = await post(`${base}/runs/${gated}/expire`);
      expect([kept.status, kept.body?.error]).toEqual([409, 'run_kept']);
      expect(((await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "id" = ANY($1::uuid[])`, [[running, gated]])) as Array<{ n: number }>)[0].n).toBe(2);
    });
  });
});
