/**
 * Backup and restore of the embedded engine, as docs/operations.md#backup-and-restore tells an
 * operator to do it: stop the host, copy its data folder, start a host on the copy. The copy holds
 * everything (the database, the generated credential key, the audit checkpoint key): the host on it
 * serves the old run with the old API key and verifies the old audit chain with the same checkpoints.
 * Independent of the engine the other tests use: the hosts here always run embedded, in processes of
 * their own.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HostProcess, startHostProcess } from '../support/host-process';
import { noopChain } from '../runs/run-kit';

const SCOPES = ['runs:create', 'runs:read', 'audit:read', 'keys:manage'];
const ENV = { OPENWOP_AUDIT_CHECKPOINT_INTERVAL: '2', OPENWOP_CONSOLE: 'false' };

async function waitCompleted(h: HostProcess, runId: string): Promise<Record<string, unknown>> {
  const until = Date.now() + 30_000;
  for (;;) {
    const r = await h.http('GET', `/v1/runs/${runId}`);
    if (r.status === 200 && r.body.status === 'completed') return r.body;
    if (Date.now() > until) throw new Error(`run ${runId} did not complete: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

describe('backup and restore of the embedded engine', () => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-embedded-backup-'));
  const original = path.join(base, 'data');
  const copy = path.join(base, 'copy');
  const hosts: HostProcess[] = [];

  afterAll(async () => {
    for (const h of hosts) await h.close();
    fs.rmSync(base, { recursive: true, force: true });
  });

  it('the data folder copied while the host is stopped: a host on the copy serves the old run and verifies the audit chain', async () => {
    fs.mkdirSync(original);
    const first = await startHostProcess({
      env: { ...ENV, OPENWOP_DATA_DIR: original },
      chains: { tenant: 'default', name: 'vendor.test.backup', chains: { 'vendor.test.backup-chain': noopChain(3) } },
      scopes: SCOPES,
    });
    hosts.push(first);
    for (const p of ['bot-1', 'bot-2']) expect((await first.http('POST', '/v1/keys', { body: { principal: p, scopes: ['runs:read'] } })).status).toBe(201);
    const created = await first.http('POST', '/v1/runs', { body: { workflowId: 'vendor.test.backup-chain', inputs: { n: 1 } } });
    expect(created.status).toBe(201);
    const runId = created.body.runId as string;
    const before = await waitCompleted(first, runId);
    const head = Number((await first.query<{ head: string }>(`SELECT max("seq") AS "head" FROM "audit_entry" WHERE "tenant" = 'default'`))[0].head);
    expect(head).toBe(3);
    const range = `fromSeq=1&toSeq=${head}`;
    const verifyBefore = await first.http('GET', `/v1/audit/verify?${range}`);
    expect(verifyBefore.body).toMatchObject({ chainValid: true, checkpointsValid: true, anomalies: [] });
    expect(verifyBefore.body.checkpoints.length).toBe(2);
    const pubKey = (await first.http('GET', '/.well-known/openwop')).body.auth.auditLogIntegrity.checkpointPublicKey as string;

    // Stop the host, copy the whole folder (as `cp -a` or `tar` would), start a host on the copy.
    await first.close();
    expect(first.proc.exitCode).toBe(0);
    fs.cpSync(original, copy, { recursive: true, preserveTimestamps: true });
    const second = await startHostProcess({ env: { ...ENV, OPENWOP_DATA_DIR: copy }, scopes: SCOPES });
    hosts.push(second);

    // The old key (first.key) works on the copy; the run is there as it was.
    const after = await second.http('GET', `/v1/runs/${runId}`, { token: first.key });
    expect(after.status).toBe(200);
    expect(after.body).toEqual(before);
    expect((await second.http('GET', '/.well-known/openwop')).body.auth.auditLogIntegrity.checkpointPublicKey).toBe(pubKey);
    const verifyAfter = await second.http('GET', `/v1/audit/verify?${range}`, { token: first.key });
    expect(verifyAfter.body).toEqual(verifyBefore.body);
    // The chain goes on from where it was (the second host minted its own key: entry 4).
    const seqs = await second.query<{ seq: string }>(`SELECT "seq" FROM "audit_entry" WHERE "tenant" = 'default' ORDER BY "seq"`);
    expect(seqs.map((r) => Number(r.seq))).toEqual([1, 2, 3, 4]);
    const whole = await second.http('GET', '/v1/audit/verify', { token: first.key });
    expect(whole.body).toMatchObject({ chainValid: true, checkpointsValid: true, anomalies: [] });
    // The copy is a database of its own: the original folder is left as it was.
    expect(fs.readdirSync(original).length).toBeGreaterThan(0);
  }, 300_000);
});
