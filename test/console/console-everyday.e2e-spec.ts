import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { AutomationRunnerService } from '../../src/capabilities/proposals/automations/automation-runner.service';
import type { RunningBrowser } from '../support/browser';
import { installChains, waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';
import { ConsoleDriver, eventually, expectAccessible, expectPages, expectScreenshot, goTo, listen, runIdOf, shot, startBrowserAndHost } from './console-kit';

/**
 * What an operator does every day, in a real Chromium against a real host with the examples installed:
 * sign-in lands on Runs; approval titles are rendered (run page and inbox); a run shows its inputs and each
 * node's input, output, timing and attempts; the lists follow the host by themselves; installed workflows
 * start from a form generated from their declared inputs, the host's refusals shown on the fields; the
 * automations page (next fire, history, disable) and runs an automation started saying so. And at 390 px
 * and 1440 px, with long content, no page is wider than the window and axe finds nothing serious.
 */
const EXAMPLES = path.join(__dirname, '..', '..', 'examples');
const LONG = 'x'.repeat(1200);

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The pages compared with committed baselines at each width (their content is fixed by the suite). */
const COMPARED = ['Workflows', 'Tools'];

/** Waits until no "Loading …" line is on the page (every list and detail answered). */
async function settled(page: Page): Promise<void> {
  // Read with evaluate (the console's CSP refuses the string functions waitForFunction compiles in the page).
  await eventually(() => page.evaluate("Array.from(document.querySelectorAll('[role=status]')).some((e) => /^Loading /.test(e.textContent || ''))") as Promise<boolean>, false, 'the page loading');
}

/**
 * The layout invariants: the document no wider than the window (its width without a scrollbar, stricter than
 * `innerWidth`), every card inside it, and nothing outside a scrolling container past its edge.
 */
async function expectNoOverflow(page: Page, what: string): Promise<void> {
  const m = (await page.evaluate(
    "({ scroll: document.documentElement.scrollWidth, inner: document.documentElement.clientWidth, cards: Array.from(document.querySelectorAll('.card')).map((c) => Math.ceil(c.getBoundingClientRect().right)).filter((r) => r > document.documentElement.clientWidth), " +
      // What sticks out, to say where: the elements whose right edge passes the window's (outside a scrolling table).
      "outside: Array.from(document.querySelectorAll('main *')).filter((e) => !e.closest('.table-scroll, .diff, .dag-scroll, pre') && e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5).slice(0, 3).map((e) => e.tagName.toLowerCase() + (e.className && typeof e.className === 'string' ? '.' + e.className.split(' ').join('.') : '')) })",
  )) as { scroll: number; inner: number; cards: number[]; outside: string[] };
  expect({ what, scrollWidth: m.scroll <= m.inner ? 'fits' : m.scroll, cardsOutside: m.cards, outside: m.outside }).toEqual({ what, scrollWidth: 'fits', cardsOutside: [], outside: [] });
}

describe('operator console: everyday use', () => {
  let t: TestApp;
  let chrome: RunningBrowser;
  let driver: ConsoleDriver;
  let admin: string;
  let viewer: string;
  let waitingRun: string;
  let completedRun: string;
  let automationRun: string;
  let longProposal: string;

  const api = (method: string, url: string, body?: unknown) => t.http(method, url, { token: admin, ...(body !== undefined ? { body } : {}) });

  beforeAll(async () => {
    ({ chrome, t } = await startBrowserAndHost(() => createTestApp({ openApi: false })));
    driver = new ConsoleDriver(chrome, await listen(t));
    admin = await t.key({ tenant: 'acme', principal: 'ada', roles: ['admin'] });
    viewer = await t.key({ tenant: 'acme', principal: 'vic', roles: ['viewer'] });
    for (const f of fs.readdirSync(path.join(EXAMPLES, 'packs'))) {
      const r = await api('POST', '/v1/installed-packs', JSON.parse(fs.readFileSync(path.join(EXAMPLES, 'packs', f), 'utf8')));
      expect([f, r.status]).toEqual([f, 201]);
    }
    // A chain of long content: a config string, run inputs and outputs with no place to break a line.
    await installChains(t, 'acme', 'private.acme.long', { 'acme.long-content': { nodes: [{ id: 'long', typeId: 'core.noop', config: { note: `${LONG} {{inputs.note}}` } }], edges: [] } });
    const waiting = await api('POST', '/v1/runs', { workflowId: 'private.examples.release', inputs: { version: '2.4.0' } });
    expect(waiting.status).toBe(201);
    waitingRun = waiting.body.runId;
    const done = await api('POST', '/v1/runs', { workflowId: 'private.examples.parallel-tools', inputs: { first: 'hello', second: 'world' } });
    completedRun = done.body.runId;
    const long = await api('POST', '/v1/runs', { workflowId: 'acme.long-content', inputs: { note: LONG } });
    await waitForStatus(t, admin, waitingRun, ['waiting-approval']);
    await waitForStatus(t, admin, completedRun, ['completed']);
    await waitForStatus(t, admin, long.body.runId, ['completed']);
    // The example automation, installed as documented (an applied automation proposal), fired once.
    const automation = JSON.parse(fs.readFileSync(path.join(EXAMPLES, 'automations', 'every-minute-digest.json'), 'utf8'));
    const p = await api('POST', '/v1/proposals', { kind: 'automation', provenance: { sourceRunIds: ['manual'] }, artifact: automation });
    expect(p.status).toBe(201);
    expect((await api('POST', `/v1/proposals/${p.body.id}/apply`, {})).status).toBe(200);
    await t.ds.query(`UPDATE "automation_schedule" SET "next_run_at" = now() - interval '1 minute' WHERE "tenant" = 'acme'`);
    const fired = await t.app.get(AutomationRunnerService).fireDue('acme');
    expect(fired).toHaveLength(1);
    automationRun = fired[0].runId;
    await waitForStatus(t, admin, automationRun, ['completed']);
    // A long proposal: a title and a template text with no place to break a line.
    const proposal = await api('POST', '/v1/proposals', {
      kind: 'prompt-template',
      title: `Long ${'y'.repeat(190)}`,
      artifact: { templateId: 'acme.long', version: '1.0.0', kind: 'system', text: LONG.repeat(3) },
      provenance: { sourceRunIds: [] },
    });
    expect(proposal.status).toBe(201);
    longProposal = proposal.body.id;
  }, 120_000);

  afterEach(async () => {
    await driver?.closePages();
  });

  afterAll(async () => {
    if (waitingRun) await t?.http('POST', `/v1/runs/${waitingRun}/cancel`, { token: admin, body: {} });
    await driver?.close();
    await chrome?.close();
    await t?.close();
  });

  it('sign-in lands on Runs, the first page; a viewer sees Workflows and Automations but no start form', async () => {
    const page = await driver.signIn(admin);
    await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
    expect(page.url()).not.toContain('#/tools');
    await expectPages(page, ['Runs', 'Approvals', 'Workflows', 'Automations', 'Tools', 'Proposals', 'Goals', 'Connections', 'Portability', 'MCP']);
    const asViewer = await driver.signIn(viewer);
    await asViewer.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
    await expectPages(asViewer, ['Runs', 'Workflows', 'Automations', 'Tools', 'Proposals', 'Goals', 'Connections', 'MCP']);
    await goTo(asViewer, 'Workflows');
    await asViewer.getByRole('button', { name: 'Release behind an approval gate' }).click();
    await asViewer.getByText('Starting a run needs the runs:create scope.').waitFor();
  });

  it('an approval title is rendered with the run\'s inputs on the run page and in the inbox, never as its template', async () => {
    const page = await driver.signIn(admin, 'Runs', `runs/${waitingRun}`);
    const gate = page.getByRole('group', { name: 'Approval gate for approval for node approve' });
    await gate.getByText('Publish release 2.4.0?').waitFor();
    await settled(page);
    expect(await page.locator('main').innerText()).not.toContain('{{');
    // A viewer cannot read the gate; the title it sees is filled from the run's inputs too.
    const asViewer = await driver.signIn(viewer, 'Runs', `runs/${waitingRun}`);
    await asViewer.getByRole('group', { name: 'Approval gate for approval for node approve' }).getByText('Publish release 2.4.0?').waitFor();
    await goTo(page, 'Approvals');
    const row = page.getByRole('table', { name: 'Approval gates' }).getByRole('row').filter({ has: page.getByRole('link', { name: `Run ${waitingRun}` }) });
    expect(await row.getByRole('cell').first().textContent()).toBe('Publish release 2.4.0?');
    expect(await page.locator('main').innerText()).not.toContain('{{');
  });

  it('a run shows its inputs, and a node its input, output, start, end and attempts', async () => {
    const page = await driver.signIn(admin, 'Runs', `runs/${completedRun}`);
    const inputs = page.getByRole('region', { name: 'Inputs' });
    expect(JSON.parse((await inputs.getByLabel("The run's inputs").textContent())!)).toEqual({ first: 'hello', second: 'world' });
    const nodes = page.getByRole('table', { name: 'Nodes' });
    await nodes.getByRole('button', { name: 'joined' }).click();
    const detail = page.getByRole('region', { name: 'Node joined' });
    const output = JSON.parse((await detail.getByLabel('Output of joined').textContent())!);
    expect(output).toEqual((await api('GET', `/v1/runs/${completedRun}`)).body.outputs.joined);
    const input = JSON.parse((await detail.getByLabel('Input of joined: its config, templates filled').textContent())!);
    expect(JSON.stringify(input)).toContain('hello');
    expect(JSON.stringify(input)).not.toContain('{{');
    const before = JSON.parse((await detail.getByLabel('Outputs of the nodes before joined').textContent())!);
    expect(Object.keys(before).sort()).toEqual(['ask-first', 'ask-second']);
    const facts = await detail.locator('dl.facts').innerText();
    expect(facts).toMatch(/Attempt\s+1/);
    expect(facts).toMatch(/Started\s+\S/);
    expect(facts).toMatch(/Ended\s+\S/);
    expect(facts).not.toMatch(/Ended\s+not yet/);
    const attempts = await nodes.getByRole('row').filter({ has: page.getByRole('button', { name: 'joined' }) }).getByRole('cell').nth(2).textContent();
    expect(attempts).toBe('1');
    await expectAccessible(page);
  });

  it('the lists follow the host: a gate opened elsewhere appears in the inbox and its run in the runs list, unreloaded', async () => {
    const page = await driver.signIn(admin, 'Approvals');
    await settled(page);
    const runs = await driver.signIn(admin, 'Runs');
    await settled(runs);
    const r = await api('POST', '/v1/runs', { workflowId: 'private.examples.release', inputs: { version: '9.9.9' } });
    expect(r.status).toBe(201);
    await page.getByRole('table', { name: 'Approval gates' }).getByRole('cell', { name: 'Publish release 9.9.9?' }).waitFor({ timeout: 15_000 });
    await runs.getByRole('table', { name: 'Runs' }).getByRole('link', { name: `Run ${r.body.runId}` }).waitFor({ timeout: 15_000 });
    await api('POST', `/v1/runs/${r.body.runId}/cancel`, {});
  });

  it('starts an installed workflow from the form of its declared inputs; what the host refuses is shown on the field', async () => {
    // The example declares what it requires: the host refuses a start without it, at the input's path.
    const refused = await api('POST', '/v1/runs', { workflowId: 'private.examples.release', inputs: {} });
    expect(refused.status).toBe(400);
    expect(refused.body.details.problems).toEqual([{ path: '/inputs/version', message: expect.stringContaining('version') }]);
    const page = await driver.signIn(admin, 'Workflows');
    const table = page.getByRole('table', { name: 'Installed workflows' });
    const row = table.getByRole('row').filter({ has: page.getByRole('button', { name: 'Release behind an approval gate' }) });
    await row.waitFor();
    expect((await row.getByRole('cell').allTextContents()).slice(1)).toEqual(['1.0.0', 'private.examples.approval-gate', 'version*']);
    await row.getByRole('button', { name: 'Release behind an approval gate' }).click();
    const form = page.getByRole('form', { name: 'Start Release behind an approval gate' });
    const version = form.getByRole('textbox', { name: /^Version/ });
    expect(await version.getAttribute('placeholder')).toBe('2.4.0');
    await form.getByRole('button', { name: 'Start run' }).click();
    await form.locator('#start-private-examples-release-version-err').getByText(/version/).waitFor();
    expect(await version.getAttribute('aria-invalid')).toBe('true');
    await expectAccessible(page);
    await version.fill('3.0.0');
    await form.getByRole('button', { name: 'Start run' }).click();
    await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
    const runId = runIdOf(page);
    await page.getByRole('group', { name: 'Approval gate for approval for node approve' }).getByText('Publish release 3.0.0?').waitFor();
    expect((await api('GET', `/v1/runs/${runId}`)).body.variables.inputs).toEqual({ version: '3.0.0' });
    await api('POST', `/v1/runs/${runId}/cancel`, {});
  });

  it('lists automations with their schedule, next fire and last run; their runs say so; Disable disarms one', async () => {
    const page = await driver.signIn(admin, 'Automations');
    const table = page.getByRole('table', { name: 'Automations' });
    const row = table.getByRole('row').filter({ has: page.getByText('examples.every-minute-digest') });
    // allTextContents() does not wait: the table is drawn once the automations have been read.
    await row.waitFor();
    const cells = await row.getByRole('cell').allTextContents();
    expect(cells.slice(1, 3)).toEqual(['every 1 min', 'enabled']);
    expect(cells[3]).not.toBe('—');
    expect(cells[4]).toContain('completed');
    expect(cells[5]).toBe('1');
    await row.getByRole('button', { name: 'History of examples.every-minute-digest' }).click();
    await page.getByRole('list', { name: 'Runs started by examples.every-minute-digest' }).getByRole('link', { name: `Run ${automationRun}` }).waitFor();
    await expectAccessible(page);
    await row.getByRole('button', { name: 'Disable examples.every-minute-digest' }).click();
    await page.getByText(/examples\.every-minute-digest: disable proposal applied/).waitFor();
    await eventually(async () => (await row.getByRole('cell').nth(2).textContent()) ?? '', 'disabled', 'the automation state');
    expect((await api('GET', '/v1/automations')).body.automations[0]).toMatchObject({ name: 'examples.every-minute-digest', enabled: false, nextRunAt: null });
    // The run it started names it (the run's metadata), not only the installer it acts as.
    const run = await driver.signIn(admin, 'Runs', `runs/${automationRun}`);
    const facts = await run.locator('dl.facts').first().innerText();
    expect(facts).toMatch(/Started by\s+automation examples\.every-minute-digest \(acting as ada\)/);
  });

  describe.each([390, 1440])('at %i px wide', (width) => {
    it('every page, a run with long inputs and a long proposal fit the window, and axe finds nothing serious', async () => {
      const page = await driver.signIn(admin, 'Runs', undefined, width);
      const names = ['Runs', 'Approvals', 'Workflows', 'Automations', 'Tools', 'Proposals', 'Goals', 'Connections', 'Portability', 'MCP'];
      for (const name of names) {
        await page.goto(`${driver.base}/console/#/${name.toLowerCase()}`);
        await page.getByRole('heading', { level: 1, name }).waitFor();
        await settled(page);
        await expectNoOverflow(page, `${name} at ${width}`);
        await expectAccessible(page);
        // The pages whose content the suite fixes (the installed examples and their tools) are compared with their
        // committed baselines; the others hold ids and times of this run and are only saved.
        if (COMPARED.includes(name)) await expectScreenshot(page, `everyday-${width}-${name.toLowerCase()}`);
        else await shot(page, `everyday-${width}-${name.toLowerCase()}`);
      }
      const longRun = (await api('GET', '/v1/runs?limit=100')).body.runs.find((r: Json) => r.workflowId === 'acme.long-content').runId;
      const views: Array<[string, string, () => Promise<void>]> = [
        ['run-long', `runs/${longRun}`, async () => {
          await page.getByRole('table', { name: 'Nodes' }).getByRole('button', { name: 'long' }).click();
          await page.getByRole('region', { name: 'Node long' }).waitFor();
        }],
        ['run-waiting', `runs/${waitingRun}`, async () => void (await page.getByText('Publish release 2.4.0?').first().waitFor())],
        ['proposal-long', `proposals/${longProposal}`, async () => void (await page.getByRole('heading', { name: /^Long y/ }).first().waitFor())],
        ['workflow-form', 'workflows', async () => {
          await page.getByRole('button', { name: 'Parallel tool calls, joined' }).click();
          await page.getByRole('form', { name: 'Start Parallel tool calls, joined' }).waitFor();
        }],
      ];
      for (const [name, route, ready] of views) {
        await page.goto(`${driver.base}/console/#/${route}`);
        await settled(page);
        await ready();
        await settled(page);
        await expectNoOverflow(page, `${name} at ${width}`);
        await expectAccessible(page);
        if (name === 'workflow-form') await expectScreenshot(page, `everyday-${width}-${name}`);
        else await shot(page, `everyday-${width}-${name}`);
      }
      // The runs table is wider than a phone: it scrolls inside its card, the page does not.
      await page.goto(`${driver.base}/console/#/runs`);
      await settled(page);
      const fits = await page.evaluate("Array.from(document.querySelectorAll('.table-scroll')).every((s) => s.getBoundingClientRect().right <= document.documentElement.clientWidth)");
      expect(fits).toBe(true);
      // The comparison sees a change: the same page 24 px narrower on its left fails against its baseline.
      await page.goto(`${driver.base}/console/#/workflows`);
      await page.getByRole('heading', { level: 1, name: 'Workflows' }).waitFor();
      await settled(page);
      // Through the CSSOM: the console's CSP refuses an injected style sheet.
      await page.evaluate("document.querySelector('main').style.paddingLeft = '24px'");
      if (process.env.OPENWOP_UPDATE_SCREENSHOTS !== '1') await expect(expectScreenshot(page, `everyday-${width}-workflows`)).rejects.toThrow(/differs from its baseline|its baseline \d+×\d+ px/);
    }, 240_000);
  });
});
