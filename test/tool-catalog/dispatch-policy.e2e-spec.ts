/**
 * Governed tool dispatch (issue 36 item 3): a per-tenant policy decides, by the tool's safety tier
 * (and per tool), whether a call is allowed, waits on an approval or is denied, on both call paths (a
 * `core.tool` node in a run, and the tool-session seam, which cannot wait for a gate). Every cell of
 * tier × decision asserts whether the tool was actually invoked (the fixture counts the calls that
 * reach it), and each governed decision is a run event and an audit entry with the policy revision.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildCli } from '../../src/cli';
import { toolsPolicySet, toolsPolicyShow } from '../../src/cli/tools.cli';
import { sink } from '../support/sink';
import { createTestApp, TestApp } from '../support/test-app';
import { expectSchemaValid, installChains, runEvents, waitForStatus } from '../runs/run-kit';

const plugin = path.join(__dirname, '../fixtures/plugins/dispatch-tools.ts');
const TIERS = ['pure', 'read', 'write', 'exec'] as const;
type Tier = (typeof TIERS)[number];
const toolOf = (tier: Tier) => `x-host-dispatchtest-${tier}`;
const DISPATCH_EVENT = 'openwopHost.tool.dispatchDecided';

function calls(toolId: string): number {
  return (globalThis as { __dispatchCalls?: Record<string, number> }).__dispatchCalls?.[toolId] ?? 0;
}

describe('tool catalog: governed dispatch policy', () => {
  let t: TestApp;
  let runner: string;
  let approver: string;
  let admin: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_PLUGINS: plugin, OPENWOP_TEST_SEAMS: 'true' } });
    runner = await t.key({ principal: 'runner', scopes: ['runs:create', 'runs:read', 'tools:read'] });
    approver = await t.key({ principal: 'approver', scopes: ['approvals:respond', 'approvals:read', 'runs:read'] });
    admin = await t.key({ principal: 'admin', scopes: ['tools:manage'] });
    await installChains(
      t,
      'default',
      'vendor.test.dispatch-chains',
      Object.fromEntries(TIERS.map((tier) => [`vendor.test.dispatch-${tier}`, { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: toolOf(tier), arguments: { note: tier } } }] }])),
    );
  });
  afterAll(async () => {
    await t?.close();
  });

  const setPolicy = async (body: Record<string, unknown>) => {
    const r = await t.http('PUT', '/v1/tools/dispatch-policy', { token: admin, body });
    expect(r.status).toBe(200);
    return r.body as { revision: number; source: string; tiers: Record<string, string> };
  };
  const startRun = async (tier: Tier) => {
    const r = await t.http('POST', '/v1/runs', { token: runner, body: { workflowId: `vendor.test.dispatch-${tier}` } });
    expect(r.status).toBe(201);
    return r.body.runId as string;
  };
  const auditDecisions = async (toolId: string) =>
    ((await t.ds.query(`SELECT "entry" FROM "audit_entry" WHERE "tenant" = 'default' AND "action" = 'tool.dispatch-decided' ORDER BY "seq"`)) as Array<{ entry: { resource: { id: string }; details: Record<string, unknown> } }>)
      .map((r) => r.entry)
      .filter((e) => e.resource.id === toolId)
      .map((e) => e.details);

  it('with nothing configured, allows every tier as before and records nothing', async () => {
    const view = await t.http('GET', '/v1/tools/dispatch-policy', { token: admin });
    expect(view.status).toBe(200);
    expect(view.body).toEqual({ revision: 0, source: 'default', tiers: { pure: 'allow', read: 'allow', write: 'allow', exec: 'allow' }, tools: {}, defaults: null, override: null, updatedAt: null, updatedBy: null });
    const before = calls(toolOf('exec'));
    const runId = await startRun('exec');
    expect((await waitForStatus(t, runner, runId, ['completed', 'failed'])).status).toBe('completed');
    expect(calls(toolOf('exec'))).toBe(before + 1);
    const events = await runEvents(t, runner, runId);
    expect(events.some((e) => e.type === DISPATCH_EVENT)).toBe(false);
    expect(await auditDecisions(toolOf('exec'))).toEqual([]);
  });

  it('refuses a malformed policy with the canonical 400 envelope, and guards the routes', async () => {
    for (const body of [{ tiers: { write: 'maybe' } }, { tiers: { admin: 'deny' } }, { tools: { 'a*b': 'deny' } }, { tools: { x: 1 } }, { tiers: 'deny' }, { other: 1 }, { expectedRevision: -1 }, { expectedRevision: 'one' }]) {
      const r = await t.http('PUT', '/v1/tools/dispatch-policy', { token: admin, body });
      expect([r.status, r.body.error, typeof r.body.message]).toEqual([400, 'validation_error', 'string']);
      expect(Object.keys(r.body).every((k) => ['error', 'message', 'details'].includes(k))).toBe(true);
    }
    const raw = await t.http('PUT', '/v1/tools/dispatch-policy', { token: admin, rawBody: '{"tiers":', headers: { 'content-type': 'application/json' } });
    expect([raw.status, raw.body.error]).toEqual([400, 'validation_error']);
    expect((await t.http('GET', '/v1/tools/dispatch-policy')).status).toBe(401);
    expect((await t.http('GET', '/v1/tools/dispatch-policy', { token: runner })).status).toBe(403);
    expect((await t.http('PUT', '/v1/tools/dispatch-policy', { token: runner, body: {} })).status).toBe(403);
    const wsAdmin = await t.key({ principal: 'ws-admin', workspace: 'ws1', scopes: ['tools:manage'] });
    expect((await t.http('PUT', '/v1/tools/dispatch-policy', { token: wsAdmin, body: {} })).status).toBe(403);
    // Nothing was written by any of them.
    expect((await t.http('GET', '/v1/tools/dispatch-policy', { token: admin })).body.revision).toBe(0);
  });

  it('versions the tenant override: every change a new revision, a stale expectedRevision refused', async () => {
    const a = await setPolicy({ tiers: { write: 'approve' } });
    expect([a.revision, a.source, a.tiers]).toEqual([1, 'tenant', { pure: 'allow', read: 'allow', write: 'approve', exec: 'allow' }]);
    const b = await setPolicy({ tiers: { write: 'approve' }, tools: { 'x-host-dispatchtest-*': 'allow' }, expectedRevision: 1 });
    expect(b.revision).toBe(2);
    const stale = await t.http('PUT', '/v1/tools/dispatch-policy', { token: admin, body: { tiers: {}, expectedRevision: 1 } });
    expect([stale.status, stale.body.error, stale.body.details]).toEqual([409, 'dispatch_policy_conflict', { revision: 2 }]);
    const changes = (await t.ds.query(`SELECT "entry" FROM "audit_entry" WHERE "tenant" = 'default' AND "action" = 'tool.dispatch-policy-changed' ORDER BY "seq"`)) as Array<{ entry: { actor: { principal: string }; details: Record<string, unknown> } }>;
    expect(changes.map((c) => [c.entry.actor.principal, c.entry.details.policyRevision, c.entry.details.tiers])).toEqual([
      ['admin', 1, ['write=approve']],
      ['admin', 2, ['write=approve']],
    ]);
  });

  describe.each(['allow', 'approve', 'deny'] as const)('every tier set to %s', (decision) => {
    let revision: number;
    beforeAll(async () => {
      revision = (await setPolicy({ tiers: Object.fromEntries(TIERS.map((tier) => [tier, decision])) })).revision;
    });

    it.each(TIERS)('core.tool node, %s tier', async (tier) => {
      const toolId = toolOf(tier);
      const before = calls(toolId);
      const runId = await startRun(tier);
      if (decision === 'allow') {
        expect((await waitForStatus(t, runner, runId, ['completed', 'failed'])).status).toBe('completed');
        expect(calls(toolId)).toBe(before + 1);
      } else if (decision === 'deny') {
        const done = await waitForStatus(t, runner, runId, ['completed', 'failed']);
        expect([done.status, done.error?.code]).toEqual(['failed', 'tool_dispatch_denied']);
        expect(calls(toolId)).toBe(before);
      } else {
        // An approval gate before the call, in the approvals inbox; nothing called while it is pending.
        await waitForStatus(t, runner, runId, ['waiting-approval']);
        const inbox = await t.http('GET', '/v1/approvals', { token: approver });
        const gate = (inbox.body.approvals as Array<{ id: string; state: string; title: string; subject: { id: string } }>).find((a) => a.subject.id.includes(runId));
        expect(gate).toBeDefined();
        expect(gate!.title).toContain(toolId);
        expect(calls(toolId)).toBe(before);
        expect((await t.http('POST', `/v1/approvals/${gate!.id}/grant`, { token: approver, body: {} })).status).toBeLessThan(300);
        expect((await waitForStatus(t, runner, runId, ['completed', 'failed'])).status).toBe('completed');
        expect(calls(toolId)).toBe(before + 1);

        // Rejected: the node fails with a clear code and the tool is never called.
        const rejected = await startRun(tier);
        await waitForStatus(t, runner, rejected, ['waiting-approval']);
        const gate2 = ((await t.http('GET', '/v1/approvals', { token: approver })).body.approvals as Array<{ id: string; subject: { id: string } }>).find((a) => a.subject.id.includes(rejected));
        expect((await t.http('POST', `/v1/approvals/${gate2!.id}/deny`, { token: approver, body: { reason: 'not now' } })).status).toBeLessThan(300);
        const failed = await waitForStatus(t, runner, rejected, ['completed', 'failed']);
        expect([failed.status, failed.error?.code]).toEqual(['failed', 'approval_denied']);
        expect(calls(toolId)).toBe(before + 1);
        const revents = await runEvents(t, runner, rejected);
        expectSchemaValid(revents);
        expect(revents.some((e) => e.type === 'tool.session.opened' || e.type === 'agent.toolCalled')).toBe(false);
        expect(revents.filter((e) => e.type === DISPATCH_EVENT).map((e) => e.payload.approval)).toEqual(['pending', 'denied']);
      }

      const events = await runEvents(t, runner, runId);
      expectSchemaValid(events);
      const decided = events.filter((e) => e.type === DISPATCH_EVENT);
      const expected = { toolId, safetyTier: tier, decision, policyRevision: revision, policySource: 'tenant', rule: 'tier' };
      expect(decided.map((e) => e.payload)).toEqual(decision === 'approve' ? [{ ...expected, approval: 'pending' }, { ...expected, approval: 'granted' }] : [expected]);
      // The decision comes before anything is opened or called.
      const types = events.map((e) => e.type);
      if (decision !== 'deny') expect(types.indexOf(DISPATCH_EVENT)).toBeLessThan(types.indexOf('tool.session.opened'));
      else expect(types).not.toContain('tool.session.opened');
      // The audit entry carries the same facts, the path and the run.
      const audited = (await auditDecisions(toolId)).filter((d) => d.runId === runId);
      expect(audited.length).toBe(decided.length);
      expect(audited[0]).toMatchObject({ ...expected, path: 'run', nodeId: 'call' });
    });

    it.each(TIERS)('tool-session seam, %s tier', async (tier) => {
      const toolId = toolOf(tier);
      const before = calls(toolId);
      const auditedBefore = (await auditDecisions(toolId)).filter((d) => d.path === 'session').length;
      const r = await t.http('POST', '/v1/host/sample/tools/session-run', { token: runner, body: { toolId, arguments: { note: 'session' } } });
      if (decision === 'allow') {
        expect(r.status).toBe(200);
        // The seam's session makes two calls, both reaching the tool.
        expect(calls(toolId)).toBe(before + 2);
        const run = await t.http('GET', `/v1/runs/${r.body.runId}`, { token: runner });
        expect(run.body.status).toBe('completed');
        expect((await runEvents(t, runner, r.body.runId)).filter((e) => e.type === DISPATCH_EVENT).map((e) => e.payload.decision)).toEqual(['allow']);
        return;
      }
      // Outside a run nothing can wait for a gate: refused, recorded, the tool never called.
      const [status, code] = decision === 'deny' ? [403, 'tool_dispatch_denied'] : [409, 'tool_approval_required'];
      expect([r.status, r.body.error]).toEqual([status, code]);
      expect(r.body.details).toEqual({ toolId, safetyTier: tier, decision, policyRevision: revision, rule: 'tier' });
      expect(calls(toolId)).toBe(before);
      const audited = (await auditDecisions(toolId)).filter((d) => d.path === 'session');
      expect(audited.length).toBe(auditedBefore + 1);
      expect(audited[audited.length - 1]).toMatchObject({ toolId, safetyTier: tier, decision, policyRevision: revision });
    });
  });

  it('holds an opened gate when the policy is loosened meanwhile: a denied gate is never followed by the call', async () => {
    const toolId = toolOf('read');
    await setPolicy({ tiers: { read: 'approve' } });
    const before = calls(toolId);
    const runId = await startRun('read');
    await waitForStatus(t, runner, runId, ['waiting-approval']);
    const loosened = (await setPolicy({})).revision;
    const gate = ((await t.http('GET', '/v1/approvals', { token: approver })).body.approvals as Array<{ id: string; subject: { id: string } }>).find((a) => a.subject.id.includes(runId));
    expect((await t.http('POST', `/v1/approvals/${gate!.id}/deny`, { token: approver, body: {} })).status).toBeLessThan(300);
    const done = await waitForStatus(t, runner, runId, ['completed', 'failed']);
    expect([done.status, done.error?.code]).toEqual(['failed', 'approval_denied']);
    expect(calls(toolId)).toBe(before);
    const decided = (await runEvents(t, runner, runId)).filter((e) => e.type === DISPATCH_EVENT).map((e) => [e.payload.decision, e.payload.rule, e.payload.approval, e.payload.policyRevision]);
    expect(decided).toEqual([
      ['approve', 'tier', 'pending', loosened - 1],
      ['approve', 'gate', 'denied', loosened],
    ]);
  });

  it('lets a per-tool rule beat the tier, and the host config default apply until the tenant overrides it', async () => {
    const rev = (await setPolicy({ tiers: { write: 'deny' }, tools: { [toolOf('write')]: 'allow', 'x-host-dispatchtest-e*': 'deny' } })).revision;
    const w = await startRun('write');
    expect((await waitForStatus(t, runner, w, ['completed', 'failed'])).status).toBe('completed');
    expect((await runEvents(t, runner, w)).find((e) => e.type === DISPATCH_EVENT)!.payload).toMatchObject({ decision: 'allow', rule: `tool:${toolOf('write')}`, policyRevision: rev });
    const e = await startRun('exec');
    const done = await waitForStatus(t, runner, e, ['completed', 'failed']);
    expect([done.status, done.error?.code]).toEqual(['failed', 'tool_dispatch_denied']);
  });
});

describe('tool catalog: governed dispatch policy from the host config', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_PLUGINS: plugin, OPENWOP_TEST_SEAMS: 'true' }, configFile: {
        tools: {
          dispatchPolicy: { tiers: { exec: 'deny', write: 'approve' }, tools: { 'mcp:offline.drop': 'deny' } },
          // Nothing listens there: a call the policy lets through fails reaching it, one it refuses never tries.
          mcpServers: [{ id: 'offline', transport: 'http', url: 'http://127.0.0.1:9/mcp', classification: { lookup: { safetyTier: 'read' }, drop: { safetyTier: 'read' } } }],
        },
      },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('applies tools.dispatchPolicy to every tenant at revision 0, under the tenant override', async () => {
    const admin = await t.key({ tenant: 'acme', principal: 'admin', scopes: ['tools:manage'] });
    const runner = await t.key({ tenant: 'acme', principal: 'runner', scopes: ['runs:create', 'runs:read', 'tools:read'] });
    const view = await t.http('GET', '/v1/tools/dispatch-policy', { token: admin });
    expect(view.body).toMatchObject({ revision: 0, source: 'config', tiers: { pure: 'allow', read: 'allow', write: 'approve', exec: 'deny' }, defaults: { tiers: { exec: 'deny', write: 'approve' }, tools: { 'mcp:offline.drop': 'deny' } }, override: null });
    const before = calls(toolOf('exec'));
    const denied = await t.http('POST', '/v1/host/sample/tools/session-run', { token: runner, body: { toolId: toolOf('exec') } });
    expect([denied.status, denied.body.error, denied.body.details.policyRevision]).toEqual([403, 'tool_dispatch_denied', 0]);
    const approve = await t.http('POST', '/v1/host/sample/tools/session-run', { token: runner, body: { toolId: toolOf('write') } });
    expect([approve.status, approve.body.error]).toEqual([409, 'tool_approval_required']);
    // The tenant loosens exec only; write keeps the config's approve.
    const put = await t.http('PUT', '/v1/tools/dispatch-policy', { token: admin, body: { tiers: { exec: 'allow' } } });
    expect(put.body).toMatchObject({ revision: 1, source: 'tenant', tiers: { write: 'approve', exec: 'allow' } });
    const allowed = await t.http('POST', '/v1/host/sample/tools/session-run', { token: runner, body: { toolId: toolOf('exec') } });
    expect(allowed.status).toBe(200);
    expect(calls(toolOf('exec'))).toBe(before + 2);
    // Another tenant still has the config default.
    const other = await t.key({ tenant: 'other', principal: 'admin', scopes: ['tools:manage'] });
    expect((await t.http('GET', '/v1/tools/dispatch-policy', { token: other })).body).toMatchObject({ revision: 0, source: 'config', tiers: { exec: 'deny' } });
  });

  it('gives two concurrent first changes of a tenant two revisions, and refuses the one made from a stale expectedRevision', async () => {
    const admin = await t.key({ tenant: 'race', principal: 'admin', scopes: ['tools:manage'] });
    const put = (body: Record<string, unknown>) => t.http('PUT', '/v1/tools/dispatch-policy', { token: admin, body });
    const both = await Promise.all([put({ tiers: { read: 'deny' } }), put({ tiers: { read: 'approve' } })]);
    expect(both.map((r) => r.status)).toEqual([200, 200]);
    expect(both.map((r) => r.body.revision).sort()).toEqual([1, 2]);
    const raced = await Promise.all([put({ tiers: {}, expectedRevision: 2 }), put({ tiers: {}, expectedRevision: 2 })]);
    expect(raced.map((r) => r.status).sort()).toEqual([200, 409]);
    expect((await t.http('GET', '/v1/tools/dispatch-policy', { token: admin })).body.revision).toBe(3);
  });

  it('governs the MCP invoke seam by the operator\'s classification, before the server is contacted', async () => {
    const caller = await t.key({ tenant: 'mcp', principal: 'caller', scopes: ['tools:read', 'runs:create'] });
    const invoke = (tool: string) => t.http('POST', '/v1/host/sample/mcp/invoke', { token: caller, body: { serverUrl: 'http://127.0.0.1:9/mcp', tool, arguments: {} } });
    const denied = await invoke('drop');
    expect([denied.status, denied.body.error, denied.body.details]).toEqual([403, 'tool_dispatch_denied', { toolId: 'mcp:offline.drop', safetyTier: 'read', decision: 'deny', policyRevision: 0, rule: 'tool:mcp:offline.drop' }]);
    // Unclassified: the write tier, which this config sends to approval, which the seam cannot wait for.
    const unclassified = await invoke('anything');
    expect([unclassified.status, unclassified.body.error, unclassified.body.details.safetyTier]).toEqual([409, 'tool_approval_required', 'write']);
    // Allowed: the call goes on to the server, which is not there (the client's own failure, no policy refusal).
    const allowed = await invoke('lookup');
    expect(['mcp_server_unreachable', 'interop_version_unsupported']).toContain(allowed.body.error);
    const audited = ((await t.ds.query(`SELECT "entry" FROM "audit_entry" WHERE "tenant" = 'mcp' AND "action" = 'tool.dispatch-decided' ORDER BY "seq"`)) as Array<{ entry: { details: Record<string, unknown> } }>).map((r) => [r.entry.details.toolId, r.entry.details.decision, r.entry.details.path]);
    expect(audited).toEqual([
      ['mcp:offline.drop', 'deny', 'mcp-invoke'],
      ['mcp:offline.anything', 'approve', 'mcp-invoke'],
    ]);
  });

  it('the CLI shows the policy and sets it from a file (tools policy [show] | set --file F)', async () => {
    const tools = buildCli().commands.find((c) => c.name() === 'tools')!;
    const policy = tools.commands.find((c) => c.name() === 'policy')!;
    expect(policy.commands.map((c) => c.name())).toEqual(['show', 'set']);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(t.app.getHttpServer().address() as { port: number }).port}`;
    const key = await t.key({ tenant: 'cli', principal: 'cli-admin', scopes: ['tools:manage'] });
    const shown = { url, key, out: sink(), err: sink() };
    expect(await toolsPolicyShow(shown, {})).toBe(0);
    expect(shown.out.text()).toBe('revision 0 (the host config (tools.dispatchPolicy))\ntier  pure   allow\ntier  read   allow\ntier  write  approve\ntier  exec   deny\ntool  mcp:offline.drop  deny\n');
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'dispatch-cli-')), 'policy.json');
    fs.writeFileSync(file, JSON.stringify({ tiers: { write: 'allow' }, tools: { 'mcp:files.*': 'deny' } }));
    const set = { url, key, out: sink(), err: sink() };
    expect(await toolsPolicySet(set, { file, revision: '0' })).toBe(0);
    expect(set.out.text()).toMatch(/^revision 1 \(the tenant's override, by cli-admin at .+\)\ntier  pure   allow\ntier  read   allow\ntier  write  allow\ntier  exec   deny\ntool  mcp:files\.\*  deny\ntool  mcp:offline\.drop  deny\n$/);
    // A stale revision and a malformed file are the host's refusals, named.
    await expect(toolsPolicySet({ ...set, out: sink() }, { file, revision: '0' })).rejects.toThrow(/409 dispatch_policy_conflict/);
    fs.writeFileSync(file, JSON.stringify({ tiers: { write: 'sometimes' } }));
    await expect(toolsPolicySet({ ...set, out: sink() }, { file })).rejects.toThrow(/400 validation_error/);
    fs.writeFileSync(file, '{not json');
    const bad = { url, key, out: sink(), err: sink() };
    expect(await toolsPolicySet(bad, { file })).toBe(1);
    expect(bad.err.text()).toMatch(/is not JSON/);
    const json = { url, key, out: sink(), err: sink() };
    expect(await toolsPolicyShow(json, { json: true })).toBe(0);
    expect(JSON.parse(json.out.text())).toMatchObject({ revision: 1, source: 'tenant', override: { tiers: { write: 'allow' }, tools: { 'mcp:files.*': 'deny' } } });
  });
});
