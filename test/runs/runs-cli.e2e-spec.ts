/** `openwop-host runs start|list|cancel` against a listening host. */
import { Writable } from 'node:stream';
import { buildCli } from '../../src/cli';
import { parseInputs, runsCancel, runsList, runsStart } from '../../src/capabilities/runs/runs.cli';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain, waitForStatus } from './run-kit';

function sink(): Writable & { text: () => string } {
  const chunks: string[] = [];
  const w = new Writable({
    write(c, _e, cb) {
      chunks.push(String(c));
      cb();
    },
  }) as Writable & { text: () => string };
  w.text = () => chunks.join('');
  return w;
}

describe('runs CLI', () => {
  let t: TestApp;
  let url: string;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.getHttpServer().address();
    url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    await installChains(t, 'default', 'vendor.test.cli', {
      'vendor.test.cli': { nodes: [{ id: 'a', typeId: 'core.noop', config: { hello: '{{inputs.who}}', n: '{{inputs.n}}' } }, ...noopChain(2).nodes as object[]], edges: [{ from: 'a', to: 'n1' }, { from: 'n1', to: 'n2' }] },
      'vendor.test.cli-slow': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 20000 } }] },
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
