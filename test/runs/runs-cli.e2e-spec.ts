/** `openwop-host runs start|list|cancel` and `approvals list|grant|deny` against a listening host. */
import { buildCli } from '../../src/cli';
import { approvalsDecide, approvalsList, approvalsResolve } from '../../src/cli/approvals.cli';
import { parseInputs, runsCancel, runsFollow, runsList, runsStart } from '../../src/cli/runs.cli';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain, waitForStatus } from './run-kit';
import { sink } from '../support/sink';


describe('runs CLI', () => {
  let t: TestApp;
  let url: string;
  let key: string;
  let approver: string;

  beforeAll(async () => {
    // Without the console, an approval's link is the run's API resource.
    t = await createTestApp({ env: { OPENWOP_CONSOLE: 'false' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.getHttpServer().address();
    url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    approver = await t.key({ principal: 'approver', scopes: ['approvals:respond'] });
    await installChains(t, 'default', 'vendor.test.cli', {
      'vendor.test.cli': { nodes: [{ id: 'a', typeId: 'core.noop', config: { hello: '{{inputs.who}}', n: '{{inputs.n}}' } }, ...noopChain(2).nodes as object[]], edges: [{ from: 'a', to: 'n1' }, { from: 'n1', to: 'n2' }] },
      'vendor.test.cli-slow': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 20000 } }] },
      'vendor.test.cli-ask': { nodes: [{ id: 'ask', typeId: 'core.clarification', config: { questions: [{ id: 'colour', question: 'Which colour?' }] } }] },
      'vendor.test.cli-gated': {
        nodes: [{ id: 'prep', typeId: 'core.noop', config: {} }, { id: 'review', typeId: 'core.approval', config: { title: 'Ship the greeting?' } }, { id: 'ship', typeId: 'core.noop', config: { shipped: true } }],
        edges: [{ from: 'prep', to: 'review' }, { from: 'review', to: 'ship' }],
      },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('parses --input values as JSON when they parse', () => {
    expect(parseInputs(['who=ada', 'n=3', 'flag=true', 'o={"a":1}', 'eq=a=b'])).toEqual({ who: 'ada', n: 3, flag: true, o: { a: 1 }, eq: 'a=b' });
    expect(() => parseInputs(['novalue'])).toThrow(/key=value/);
  });

  it('starts a run and follows its events to completion with a progress line', async () => {
    const out = sink();
    const err = sink();
    const code = await runsStart({ url, key, out, err }, 'vendor.test.cli', { input: ['who=ada', 'n=2'], follow: true });
    expect(code).toBe(0);
    expect(err.text()).toMatch(/3\/3 nodes done {2}run\.completed/);
    expect(out.text()).toMatch(/completed/);
    expect(out.text()).toContain('"n2"');
  });

  it('counts completed nodes against the chain’s node count, and says what a waiting run needs', async () => {
    const err = sink();
    const out = sink();
    const following = runsStart({ url, key, out, err, urlArgument: url }, 'vendor.test.cli-gated', { follow: true });
    const deadline = Date.now() + 30_000;
    let gate: string | undefined;
    while (!gate && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      gate = /waiting for approval (\S+) \(node review\); grant it with: openwop-host approvals --url (\S+) grant (\S+)/.exec(err.text())?.[1];
    }
    expect(gate).toBeDefined();
    expect(err.text()).toContain(`grant it with: openwop-host approvals --url ${url} grant ${gate}`);
    // While it waits: one of three nodes done (the node that started the gate is not counted).
    expect(err.text()).toMatch(/1\/3 nodes done {2}node\.suspended review/);
    expect(err.text()).not.toMatch(/\/0 nodes/);

    const listed = sink();
    expect(await approvalsList({ url, key: approver, out: listed, err: sink() }, {})).toBe(0);
    expect(listed.text()).toContain(`${gate}  pending   0/1  Ship the greeting?`);
    expect(listed.text()).toMatch(/run \S+ node review \(vendor\.test\.cli-gated\) {2}http:\/\/127\.0\.0\.1:\d+\/v1\/runs\/\S+/);
    const json = sink();
    await approvalsList({ url, key: approver, out: json, err: sink() }, { json: true });
    const item = (JSON.parse(json.text()).approvals as Array<Record<string, unknown>>).find((a) => a.id === gate)!;
    expect(item).toMatchObject({ title: 'Ship the greeting?', nodeId: 'review', workflowId: 'vendor.test.cli-gated', link: `/v1/runs/${item.runId}` });

    const granted = sink();
    expect(await approvalsDecide({ url, key: approver, out: granted, err: sink() }, 'grant', gate!, { reason: 'fine' })).toBe(0);
    expect(granted.text()).toBe(`${gate}  granted  Ship the greeting?\n`);
    expect(await following).toBe(0);
    expect(err.text()).toMatch(/3\/3 nodes done {2}run\.completed/);
    expect(out.text()).toContain('"shipped": true');
    // Decided already: the host's answer, as one error.
    await expect(approvalsDecide({ url, key: approver, out: sink(), err: sink() }, 'deny', gate!, {})).rejects.toThrow(/409 approval_closed/);
    const all = sink();
    await approvalsList({ url, key: approver, out: all, err: sink() }, { all: true });
    expect(all.text()).toContain(`${gate}  granted`);
    const none = sink();
    const noneErr = sink();
    await approvalsList({ url, key: approver, out: none, err: noneErr }, {});
    expect([none.text(), noneErr.text()]).toEqual(['', 'no pending approval\n']);
  });

  it('follows a run whose gate was granted already without asking to grant it again', async () => {
    const started = sink();
    expect(await runsStart({ url, key, out: started, err: sink() }, 'vendor.test.cli-gated', {})).toBe(0);
    const runId = started.text().split(/\s+/)[0];
    await waitForStatus(t, key, runId, ['waiting-approval']);
    // While it waits, following it says what the gate needs.
    const waiting = sink();
    const live = runsFollow({ url, key, out: sink(), err: waiting }, runId, {});
    let gate: string | undefined;
    for (const deadline = Date.now() + 30_000; !gate && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 100));
      gate = /waiting for approval (\S+) \(node review\); grant it with: openwop-host approvals grant \S+\n/.exec(waiting.text())?.[1];
    }
    expect(gate).toBeDefined();
    await approvalsDecide({ url, key: approver, out: sink(), err: sink() }, 'grant', gate!, {});
    expect(await live).toBe(0);
    // Followed again, from its first event: the gate's state comes from the host, not from the replayed event.
    const both = await t.key({ principal: 'approver', scopes: ['runs:read', 'approvals:respond'] });
    for (const [k, notice] of [
      [both, `approval ${gate} (node review) was granted already`],
      // A key that cannot read gates: the run's node no longer waits.
      [key, `approval ${gate} (node review) no longer waits`],
    ]) {
      const err = sink();
      const out = sink();
      expect(await runsFollow({ url, key: k, out, err }, runId, {})).toBe(0);
      expect(err.text()).toContain(`${notice}\n`);
      expect(err.text()).not.toMatch(/grant it with/);
      expect(out.text()).toContain('"shipped": true');
    }
  });

  it('denies a gate: the followed run fails and the command exits 1', async () => {
    const err = sink();
    const following = runsStart({ url, key, out: sink(), err }, 'vendor.test.cli-gated', { follow: true });
    let gate: string | undefined;
    for (const deadline = Date.now() + 30_000; !gate && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 100));
      gate = /waiting for approval (\S+)/.exec(err.text())?.[1];
    }
    // No --url given: the suggested command is the bare one.
    expect(err.text()).toContain(`grant it with: openwop-host approvals grant ${gate}`);
    const denied = sink();
    await approvalsDecide({ url, key: approver, out: denied, err: sink() }, 'deny', gate!, { json: true });
    expect(JSON.parse(denied.text())).toMatchObject({ id: gate, state: 'denied' });
    expect(await following).toBe(1);
    expect(err.text()).toMatch(/1\/3 nodes done {2}run\.failed/);
    // Without approvals:respond: the host refuses.
    await expect(approvalsList({ url, key, out: sink(), err: sink() }, {})).rejects.toThrow(/403 forbidden/);
  });

  it('resolves a clarification with a value: the followed run completes', async () => {
    const err = sink();
    const following = runsStart({ url, key, out: sink(), err }, 'vendor.test.cli-ask', { follow: true });
    let gate: string | undefined;
    for (const deadline = Date.now() + 30_000; !gate && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 100));
      gate = /waiting for clarification (\S+)/.exec(err.text())?.[1];
    }
    expect(err.text()).toContain(`resolve it with: openwop-host approvals resolve ${gate} --value '<json>'`);
    const listed = sink();
    await approvalsList({ url, key: approver, out: listed, err: sink() }, {});
    expect(listed.text()).toContain(`${gate}  pending   0/1`);
    expect(listed.text()).toContain('[clarification]');
    const bad = sink();
    expect(await approvalsResolve({ url, key: approver, out: sink(), err: bad }, gate!, { value: '{nope' })).toBe(2);
    await expect(approvalsResolve({ url, key: approver, out: sink(), err: sink() }, gate!, { value: '{"answers":{}}' })).rejects.toThrow(/400 validation_error/);
    const resolved = sink();
    expect(await approvalsResolve({ url, key: approver, out: resolved, err: sink() }, gate!, { value: '{"answers":{"colour":"green"}}' })).toBe(0);
    expect(resolved.text()).toMatch(new RegExp(`^${gate}  resolved  run \\S+ node ask is `));
    expect(await following).toBe(0);
    expect(err.text()).toMatch(/1\/1 nodes done {2}run\.completed/);
  });

  it('lists runs and cancels one', async () => {
    const out = sink();
    expect(await runsStart({ url, key, out, err: sink() }, 'vendor.test.cli-slow', {})).toBe(0);
    const runId = out.text().split(/\s+/)[0];
    await waitForStatus(t, key, runId, ['running', 'pending']);
    const listed = sink();
    await runsList({ url, key, out: listed, err: sink() }, {});
    expect(listed.text()).toContain(runId);
    const cancelled = sink();
    await runsCancel({ url, key, out: cancelled, err: sink() }, runId);
    expect(cancelled.text()).toMatch(new RegExp(`${runId}  (cancelling|cancelled)`));
    await waitForStatus(t, key, runId, ['cancelled']);
  });

  it('reports the host error and needs a key', async () => {
    await expect(runsStart({ url, key, out: sink(), err: sink() }, 'no.such.chain', {})).rejects.toThrow(/404 not_found/);
    const prev = process.env.OPENWOP_API_KEY;
    delete process.env.OPENWOP_API_KEY;
    try {
      await expect(buildCli().exitOverride().parseAsync(['node', 'openwop-host', 'runs', '--url', url, 'list'])).rejects.toThrow(/--key/);
    } finally {
      if (prev !== undefined) process.env.OPENWOP_API_KEY = prev;
    }
  });
});
