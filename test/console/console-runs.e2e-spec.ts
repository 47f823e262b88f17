import type { RunningBrowser } from '../support/browser';
import { installChains, waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';
import { ConsoleDriver, dagNode, eventually, expectAccessible, listen, runIdOf, shot, startBrowserAndHost } from './console-kit';

/**
 * The console's run view in a real headless Chromium against a real host: the run list, a run's workflow
 * drawn from its definition (every node and edge, coloured live as its events arrive), the node timeline,
 * event payloads on demand, deep links (`#/runs/<runId>`), short run ids with copy, start and cancel.
 */
const FILL = {
  pending: 'rgb(243, 244, 246)',
  running: 'rgb(219, 234, 254)',
  completed: 'rgb(216, 240, 223)',
  cancelled: 'rgb(226, 229, 234)',
};

describe('operator console: runs', () => {
  let t: TestApp;
  let chrome: RunningBrowser;
  let driver: ConsoleDriver;
  let adminA: string;
  let viewerA: string;
  /** The acme run that failed on its RFC 0058 loop bound. */
  let failedRunA: string;
  /** The quick acme runs (newest last). */
  const quickRunsA: string[] = [];
  /** A completed run of the four-node diamond. */
  let diamondRun: string;

  beforeAll(async () => {
    ({ chrome, t } = await startBrowserAndHost(() => createTestApp({ openApi: false })));
    driver = new ConsoleDriver(chrome, await listen(t));
    adminA = await t.key({ tenant: 'acme', principal: 'ada', roles: ['admin'] });
    viewerA = await t.key({ tenant: 'acme', principal: 'vic', roles: ['viewer'] });
    // A quick chain (one core.noop node), a slow one that waits on a core.delay node until it is cancelled, and a
    // diamond whose two branches join.
    await installChains(t, 'acme', 'private.acme.console-chains', {
      'acme.quick': { nodes: [{ id: 'hello', typeId: 'core.noop', config: { greeting: 'hello {{inputs.name}}' } }], edges: [] },
      'acme.slow': {
        nodes: [
          { id: 'hello', typeId: 'core.noop', config: { greeting: 'hello {{inputs.name}}' } },
          { id: 'wait', typeId: 'core.delay', config: { ms: 120_000 } },
        ],
        edges: [{ from: 'hello', to: 'wait' }],
      },
      // Two paced steps: a pause lands while one of them runs, and the run stops before the last node.
      'acme.steps': {
        nodes: [
          { id: 'first', typeId: 'core.delay', config: { ms: 3000 } },
          { id: 'second', typeId: 'core.delay', config: { ms: 3000 } },
          { id: 'done', typeId: 'core.noop', config: { done: true } },
        ],
        edges: [{ from: 'first', to: 'second' }, { from: 'second', to: 'done' }],
      },
      'acme.report': { nodes: [{ id: 'report', typeId: 'core.artifact', config: { name: 'report.txt', content: 'hello {{inputs.name}}' } }], edges: [] },
      'acme.diamond': {
        nodes: [
          { id: 'src', typeId: 'core.noop', config: { greeting: 'hello' } },
          { id: 'left', typeId: 'core.noop', config: { side: 'left' } },
          { id: 'right', typeId: 'core.delay', config: { ms: 300 } },
          { id: 'join', typeId: 'core.noop', config: { both: true } },
        ],
        edges: [{ from: 'src', to: 'left' }, { from: 'src', to: 'right' }, { from: 'left', to: 'join' }, { from: 'right.delayedMs', to: 'join.waited' }],
      },
    });
    await installChains(t, 'globex', 'private.globex.console-chains', { 'globex.quick': { nodes: [{ id: 'hello', typeId: 'core.noop', config: { greeting: 'hi' } }], edges: [] } });
    // One more completed run than the console's page size (10), so the list has a second page.
    for (let i = 0; i < 11; i++) {
      const r = await t.http('POST', '/v1/runs', { token: adminA, body: { workflowId: 'acme.quick', inputs: { name: `Ada-${i}` } } });
      expect(r.status).toBe(201);
      quickRunsA.push(r.body.runId);
    }
    // A run that fails on its bound: two node executions allowed one.
    const failed = await t.http('POST', '/v1/runs', { token: adminA, body: { workflowId: 'acme.slow', configurable: { maxLoopIterations: 1 } } });
    expect(failed.status).toBe(201);
    failedRunA = failed.body.runId;
    const diamond = await t.http('POST', '/v1/runs', { token: adminA, body: { workflowId: 'acme.diamond' } });
    expect(diamond.status).toBe(201);
    diamondRun = diamond.body.runId;
    for (const id of quickRunsA) await waitForStatus(t, adminA, id, ['completed']);
    await waitForStatus(t, adminA, failedRunA, ['failed']);
    await waitForStatus(t, adminA, diamondRun, ['completed']);
  }, 120_000);

  afterEach(async () => {
    await driver?.closePages();
  });

  afterAll(async () => {
    await driver?.close();
    await chrome?.close();
    await t?.close();
  });

  it('starts a core.delay chain from the form, draws it, follows its live events over SSE (resuming with Last-Event-ID) and cancels it', async () => {
    const runsBefore = (await t.http('GET', '/v1/runs?limit=500', { token: adminA })).body.runs.length;
    const page = await driver.signIn(adminA, 'Runs');
    const form = page.getByRole('form', { name: 'Start a run' });
    const formAlert = form.getByRole('alert');
    // Malformed starts are shown with the host's canonical envelope (or, for text that is not JSON, refused before sending).
    await page.getByLabel('Workflow id').fill('');
    await page.getByRole('button', { name: 'Start run' }).click();
    await formAlert.waitFor();
    expect(await formAlert.locator('.error-code').textContent()).toBe('validation_error');
    expect(await formAlert.textContent()).toContain('HTTP 400');
    await page.getByLabel('Workflow id').fill('acme.quick');
    await page.getByLabel('Inputs (JSON)').fill('[1, 2]');
    await page.getByRole('button', { name: 'Start run' }).click();
    await formAlert.locator('.error-code', { hasText: 'validation_error' }).waitFor();
    await formAlert.getByText('HTTP 400').waitFor();
    expect(await formAlert.locator('details pre').textContent()).toContain('inputs');
    await page.getByLabel('Inputs (JSON)').fill('{"name": ');
    await page.getByRole('button', { name: 'Start run' }).click();
    await formAlert.locator('.error-code', { hasText: 'invalid_json' }).waitFor();
    await page.getByLabel('Workflow id').fill('globex.quick');
    await page.getByLabel('Inputs (JSON)').fill('{}');
    await page.getByRole('button', { name: 'Start run' }).click();
    // Another tenant's chain is unknown here.
    await formAlert.locator('.error-code', { hasText: 'not_found' }).waitFor();
    await expectAccessible(page);
    await shot(page, '09-runs-start-error');
    // None of the refused starts created a run.
    expect((await t.http('GET', '/v1/runs?limit=500', { token: adminA })).body.runs.length).toBe(runsBefore);

    // The first event stream the page opens drops after the events logged so far (served from the engine's
    // own log); the page must reconnect to the host with Last-Event-ID and continue from there.
    let firstStream = true;
    let droppedAfter = 0;
    const resumedWith: Array<string | undefined> = [];
    await page.route(/\/v1\/runs\/[^/]+\/events(\?[^/]*)?$/, async (route) => {
      const headers = await route.request().allHeaders();
      if (firstStream) {
        firstStream = false;
        const runId = new URL(route.request().url()).pathname.split('/')[3];
        const polled = await t.http('GET', `/v1/runs/${runId}/events/poll?lastSequence=0&timeout=5`, { token: adminA });
        const events = polled.body.events as Array<{ sequence: number; type: string }>;
        expect(events.length).toBeGreaterThan(0);
        droppedAfter = events[events.length - 1].sequence;
        const body = events.map((e) => `id: ${e.sequence}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');
        return route.fulfill({ status: 200, contentType: 'text/event-stream', body });
      }
      resumedWith.push(headers['last-event-id']);
      return route.continue();
    });

    await page.getByLabel('Workflow id').fill('acme.slow');
    await page.getByLabel('Inputs (JSON)').fill('{"name": "Ada"}');
    await page.getByRole('button', { name: 'Start run' }).click();
    // The started run opens at its own address, under its short id.
    await page.waitForURL(/#\/runs\/[0-9a-f-]{36}$/);
    const runId = runIdOf(page);
    await page.getByRole('heading', { level: 2, name: `Run ${runId.slice(0, 8)}` }).waitFor();
    expect(await form.getByRole('alert').count()).toBe(0);
    const events = page.getByRole('list', { name: 'Run events' });
    await events.getByText('node.started [wait]').waitFor();
    // Every event once, in order, without a gap across the reconnect.
    const seqs = async () => await events.getByRole('listitem').evaluateAll((li) => li.map((x) => Number(x.getAttribute('value'))));
    expect(await seqs()).toEqual([1, 2, 3, 4]);
    expect(await events.getByRole('listitem').allTextContents()).toEqual([
      expect.stringContaining('run.started'),
      expect.stringContaining('node.started [hello]'),
      expect.stringContaining('node.completed [hello]'),
      expect.stringContaining('node.started [wait]'),
    ]);
    expect(droppedAfter).toBeGreaterThan(0);
    // The page reconnects about a second after the drop.
    for (const until = Date.now() + 5000; !resumedWith.length && Date.now() < until; ) await page.waitForTimeout(50);
    expect(resumedWith[0]).toBe(String(droppedAfter));
    // The drawing: both nodes and the edge between them, `hello` completed and `wait` running.
    const graph = page.getByRole('group', { name: 'Workflow acme.slow: 2 nodes, 1 edge' });
    await graph.waitFor();
    expect(await graph.locator('[data-edge]').evaluateAll((es) => es.map((e) => e.getAttribute('data-edge')))).toEqual(['hello->wait']);
    const wait = dagNode(page, 'wait');
    await eventually(wait.status, 'running', 'the wait node');
    expect(await wait.fill()).toBe(FILL.running);
    expect(await dagNode(page, 'hello').fill()).toBe(FILL.completed);
    const nodes = page.getByRole('table', { name: 'Nodes' });
    // The node table: every node of the chain, its state from the events (the node in flight is known from its
    // node.started event before the engine's batch writes its row).
    await nodes.getByRole('row', { name: /^hello completed/ }).waitFor();
    await nodes.getByRole('row', { name: /^wait running/ }).waitFor();
    await page.locator('dl.facts .badge-running').waitFor();
    // The list shows the new run.
    await page.getByRole('button', { name: 'Refresh' }).click();
    const row = page.getByRole('table', { name: 'Runs' }).getByRole('row').filter({ has: page.getByRole('link', { name: `Run ${runId}` }) });
    await row.filter({ hasText: 'acme.slow' }).waitFor();
    await expectAccessible(page);
    await shot(page, '09-runs-live');

    await page.getByRole('button', { name: 'Cancel run', exact: true }).click();
    await page.getByRole('button', { name: 'Cancel this run' }).click();
    await events.getByText('run.cancelled').waitFor();
    await page.locator('dl.facts .badge-cancelled').waitFor();
    await nodes.getByRole('row', { name: /^wait cancelled/ }).waitFor();
    // The drawing follows: the node that was running is now drawn cancelled.
    await eventually(wait.status, 'cancelled', 'the wait node');
    expect(await wait.fill()).toBe(FILL.cancelled);
    expect((await t.http('GET', `/v1/runs/${runId}`, { token: adminA })).body.status).toBe('cancelled');
    const all = await seqs();
    expect(all).toEqual(all.map((_, i) => i + 1));
    // Terminal: no cancel button any more, and the list follows.
    expect(await page.getByRole('button', { name: 'Cancel run', exact: true }).count()).toBe(0);
    await row.filter({ hasText: 'cancelled' }).waitFor();
    expect(resumedWith).toEqual([String(droppedAfter)]);
    await shot(page, '09-runs-cancelled');
  });

  it('draws every node and edge of a diamond with dagre, a timeline of node durations, node details and event payloads on demand', async () => {
    // Opened by its address in a fresh tab.
    const page = await driver.signIn(adminA, 'Runs', `runs/${diamondRun}`);
    const graph = page.getByRole('group', { name: 'Workflow acme.diamond: 4 nodes, 4 edges' });
    await graph.waitFor();
    const drawn = graph.locator('g.dag-node');
    expect(await drawn.evaluateAll((ns) => ns.map((n) => n.getAttribute('data-node-id')))).toEqual(['src', 'left', 'right', 'join']);
    expect((await graph.locator('[data-edge]').evaluateAll((es) => es.map((e) => e.getAttribute('data-edge')))).sort()).toEqual(['left->join', 'right->join', 'src->left', 'src->right']);
    for (const id of ['src', 'left', 'right', 'join']) {
      await eventually(dagNode(page, id).status, 'completed', `node ${id}`);
      expect(await dagNode(page, id).fill()).toBe(FILL.completed);
    }
    // Laid out by rank: the source first, both branches side by side, the join last; no two boxes overlap.
    const boxes = Object.fromEntries(
      await Promise.all(['src', 'left', 'right', 'join'].map(async (id) => [id, (await dagNode(page, id).node.boundingBox())!] as const)),
    );
    expect(boxes.src.x).toBeLessThan(boxes.left.x);
    expect(boxes.left.x).toBe(boxes.right.x);
    expect(boxes.left.x).toBeLessThan(boxes.join.x);
    expect(Math.abs(boxes.left.y - boxes.right.y)).toBeGreaterThanOrEqual(boxes.left.height);
    // The timeline: each node's duration (the delay node at least its 300 ms) and a bar on the run's time axis.
    const nodes = page.getByRole('table', { name: 'Nodes' });
    const rightRow = nodes.getByRole('row', { name: /^right completed/ });
    await rightRow.waitFor();
    const ms = (await rightRow.locator('td').nth(3).textContent())!;
    expect(ms).toMatch(/^(\d+ ms|\d+\.\d s)$/);
    expect(ms.endsWith(' s') || Number(ms.replace(' ms', '')) >= 300).toBe(true);
    expect(await nodes.locator('svg.tl rect.tl-running').count()).toBe(4);
    await page.getByText(/^Timeline over /).waitFor();
    // A node's details and its events only, from the drawing (keyboard too).
    await dagNode(page, 'join').node.focus();
    await page.keyboard.press('Enter');
    const detail = page.getByRole('region', { name: 'Node join' });
    await detail.waitFor();
    // Its input (the config, nothing to fill here, and what left and right answered) and its output.
    expect(await detail.getByRole('figure', { name: 'Input of join: its config, templates filled' }).textContent()).toContain('"both": true');
    expect(Object.keys(JSON.parse((await detail.getByLabel('Outputs of the nodes before join').textContent())!)).sort()).toEqual(['left', 'right']);
    await detail.getByRole('figure', { name: 'Output of join' }).waitFor();
    const events = page.getByRole('list', { name: 'Run events' });
    await eventually(async () => (await events.getByRole('listitem').allTextContents()).map((x) => x.replace(/^.* (node\.\w+) \[join\]$/, '$1')), ['node.started', 'node.completed'], 'the join node\'s events');
    // A payload is shown on demand only.
    expect(await page.locator('pre.payload').count()).toBe(0);
    await events.getByText('node.completed [join]').click();
    const payload = page.getByLabel(/^Payload of event \d+$/);
    await payload.waitFor();
    expect(JSON.parse((await payload.textContent())!)).toMatchObject({ nodeId: 'join' });
    await expectAccessible(page);
    await shot(page, '10-run-dag-diamond');
    await page.getByRole('button', { name: 'Close node' }).click();
    await detail.waitFor({ state: 'detached' });
    expect(await events.getByRole('listitem').count()).toBeGreaterThan(8);
  });

  it('lists by status with "Load more" and short run ids with copy, and shows a completed run\'s outputs and a failed run\'s error code', async () => {
    const page = await driver.signIn(adminA, 'Runs');
    await page.getByLabel('Status').selectOption('completed');
    await page.getByText('10 runs shown, more on the host').waitFor();
    // Newest first: the oldest quick run is on the second page.
    expect(await page.getByRole('link', { name: `Run ${quickRunsA[0]}` }).count()).toBe(0);
    await page.getByRole('button', { name: 'Load more' }).click();
    await page.getByText(/^12 runs shown$/).waitFor();
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    const links = page.getByRole('table', { name: 'Runs' }).locator('tbody tr td:first-child a');
    expect(await links.evaluateAll((as) => as.map((a) => a.getAttribute('title')))).toEqual([diamondRun, ...[...quickRunsA].reverse()]);
    // A short id in the list (the first 8 characters), the full one copied by its button.
    const first = page.getByRole('link', { name: `Run ${quickRunsA[0]}` });
    expect(await first.textContent()).toBe(quickRunsA[0].slice(0, 8));
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: driver.base });
    await page.getByRole('button', { name: `Copy run ${quickRunsA[0]}` }).click();
    await page.getByRole('row').filter({ has: first }).getByText('Copied').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(quickRunsA[0]);
    await first.click();
    expect(runIdOf(page)).toBe(quickRunsA[0]);
    const outputs = page.getByRole('figure').filter({ hasText: 'Outputs' });
    await outputs.waitFor();
    expect(await outputs.textContent()).toContain('hello Ada-0');
    await page.getByRole('table', { name: 'Nodes' }).getByRole('row', { name: /^hello completed/ }).waitFor();
    await page.getByRole('list', { name: 'Run events' }).getByText('run.completed').waitFor();
    // Opening a run that had already ended keeps the pages loaded so far.
    await page.getByText(/^12 runs shown$/).waitFor();
    await expectAccessible(page);
    await shot(page, '09-runs-completed');

    await page.getByLabel('Status').selectOption('failed');
    await page.getByText(/^1 run shown$/).waitFor();
    await page.getByRole('link', { name: `Run ${failedRunA}` }).click();
    await page.locator('dd.run-error code', { hasText: 'loop_limit' }).waitFor();
    await page.getByRole('list', { name: 'Run events' }).getByText('cap.breached').waitFor();
    expect(await page.getByRole('figure').filter({ hasText: 'Outputs' }).count()).toBe(0);
    // The node the bound stopped was never run: it is drawn as skipped, not left out.
    await eventually(dagNode(page, 'wait').status, 'skipped', 'the wait node of the failed run');
    await shot(page, '09-runs-failed');
    // An unknown run id in the address is the host's 404, shown as answered.
    await page.goto(`${driver.base}/console/#/runs/00000000-0000-4000-8000-000000000000`);
    await page.getByRole('alert').locator('.error-code', { hasText: 'not_found' }).first().waitFor();
  });

  it('pauses a run between its nodes, resumes it, and replays it once it completed (the fork opens on its own page)', async () => {
    // Signed in before the run starts: on a loaded machine a sign-in can outlast the run's first step.
    const page = await driver.signIn(adminA, 'Runs');
    const started = await t.http('POST', '/v1/runs', { token: adminA, body: { workflowId: 'acme.steps' } });
    expect(started.status).toBe(201);
    const runId = started.body.runId as string;
    await page.evaluate(`location.hash = ${JSON.stringify(`#/runs/${runId}`)}`);
    await page.getByRole('list', { name: 'Run events' }).getByText('node.started [first]').waitFor();
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    // drain-current-node: the step in flight finishes, nothing new starts, the run is paused before its last node.
    await page.locator('dl.facts .badge-paused').waitFor({ timeout: 15_000 });
    const events = page.getByRole('list', { name: 'Run events' });
    await events.getByText('run.paused').waitFor();
    expect(await events.getByText('node.started [done]').count()).toBe(0);
    const startedWhilePaused = await events.getByText(/^node\.started/).count();
    expect(startedWhilePaused).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 500));
    expect(await events.getByText(/^node\.started/).count()).toBe(startedWhilePaused);
    expect(await page.getByRole('button', { name: 'Pause', exact: true }).count()).toBe(0);
    await shot(page, '12-run-paused');
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    await page.locator('dl.facts .badge-completed').waitFor({ timeout: 15_000 });
    await events.getByText('run.resumed').waitFor();
    expect((await t.http('GET', `/v1/runs/${runId}`, { token: adminA })).body.status).toBe('completed');

    // A completed run can be replayed: the page follows the new run, which completes too.
    await page.getByRole('button', { name: 'Replay', exact: true }).click();
    await page.waitForURL((u) => !u.hash.endsWith(runId) && /#\/runs\/[0-9a-f-]{36}$/.test(u.hash));
    const forkId = decodeURIComponent(new URL(page.url()).hash.split('/').pop()!);
    expect(forkId).not.toBe(runId);
    await page.locator('dl.facts .badge-completed').waitFor({ timeout: 15_000 });
    const fork = (await t.http('GET', `/v1/runs/${forkId}`, { token: adminA })).body;
    expect([fork.status, fork.workflowId]).toEqual(['completed', 'acme.steps']);
    await expectAccessible(page);
    await shot(page, '13-run-replayed');
  });

  it('lists the artifacts a run stored and downloads one with the session\'s key', async () => {
    const started = await t.http('POST', '/v1/runs', { token: adminA, body: { workflowId: 'acme.report', inputs: { name: 'Ada' } } });
    expect(started.status).toBe(201);
    const runId = started.body.runId as string;
    await waitForStatus(t, adminA, runId, ['completed']);
    const page = await driver.signIn(adminA, undefined, `runs/${runId}`);
    const list = page.getByRole('list', { name: 'Run artifacts' });
    await list.getByText('report.txt', { exact: true }).waitFor();
    expect(await list.textContent()).toContain('text/plain');
    const [download] = await Promise.all([page.waitForEvent('download'), list.getByRole('button', { name: 'Download report.txt' }).click()]);
    expect(download.suggestedFilename()).toBe('report.txt');
    const stream = await download.createReadStream();
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(Buffer.from(c));
    expect(Buffer.concat(chunks).toString('utf8')).toBe('hello Ada');
    await shot(page, '14-run-artifacts');
  });

  it('a viewer sees neither pause nor replay; a key without runs:create no replay', async () => {
    const done = quickRunsA[0];
    const reader = await t.key({ tenant: 'acme', principal: 'rita', scopes: ['runs:read', 'runs:cancel'] });
    for (const [token, mayReplay] of [
      [viewerA, false],
      [reader, false],
      [adminA, true],
    ] as const) {
      const page = await driver.signIn(token, undefined, `runs/${done}`);
      await page.locator('dl.facts .badge-completed').waitFor();
      expect(await page.getByRole('button', { name: 'Replay', exact: true }).count()).toBe(mayReplay ? 1 : 0);
      expect(await page.getByRole('button', { name: 'Pause', exact: true }).count()).toBe(0);
    }
  });

  it('a key without runs:cancel sees no cancel button, one without runs:create no start form', async () => {
    const slow = await t.http('POST', '/v1/runs', { token: adminA, body: { workflowId: 'acme.slow' } });
    expect(slow.status).toBe(201);
    const runId = slow.body.runId as string;
    try {
      await waitForStatus(t, adminA, runId, ['running']);
      const starter = await t.key({ tenant: 'acme', principal: 'sam', scopes: ['runs:read', 'runs:create'] });
      const canceller = await t.key({ tenant: 'acme', principal: 'cat', scopes: ['runs:read', 'runs:cancel'] });
      for (const [token, mayStart, mayCancel] of [
        [viewerA, false, false],
        [starter, true, false],
        [canceller, false, true],
      ] as const) {
        const page = await driver.signIn(token, 'Runs');
        await page.getByRole('link', { name: `Run ${runId}` }).click();
        await page.getByRole('list', { name: 'Run events' }).getByText('node.started [wait]').waitFor();
        await page.locator('dl.facts .badge-running').waitFor();
        expect(await page.getByRole('button', { name: 'Start run' }).count()).toBe(mayStart ? 1 : 0);
        expect(await page.getByRole('button', { name: 'Cancel run', exact: true }).count()).toBe(mayCancel ? 1 : 0);
        if (token === viewerA) await shot(page, '08-viewer-runs');
        await page.context().close();
      }
    } finally {
      await t.http('POST', `/v1/runs/${runId}/cancel`, { token: adminA, body: {} });
    }
  });
});
