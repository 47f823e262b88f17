import { randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { RunningBrowser } from '../support/browser';
import { installChains, waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';
import { ConsoleDriver, dagNode, eventually, expectAccessible, expectPages, listen, shot, startBrowserAndHost } from './console-kit';

/**
 * Approval gates in the console, in a real headless Chromium against a real host (proposals activated
 * through approval gates, bearer JWTs accepted): a run waiting on a `core.approval` step shows the gate on
 * its page with Grant/Deny, its drawing following the decision; the Approvals page lists every pending gate
 * with its title, run, node and workflow; a proposal's gate is decided where the proposal is shown; and
 * the buttons follow the credential's scopes.
 */
const FILL = {
  pending: 'rgb(243, 244, 246)',
  waiting: 'rgb(255, 237, 194)',
  completed: 'rgb(216, 240, 223)',
  failed: 'rgb(251, 213, 213)',
};

describe('operator console: approvals', () => {
  let t: TestApp;
  let chrome: RunningBrowser;
  let driver: ConsoleDriver;
  let admin: string;
  const jwtSecret = randomBytes(32).toString('hex');

  async function gatedRun(): Promise<string> {
    const r = await t.http('POST', '/v1/runs', { token: admin, body: { workflowId: 'acme.gated' } });
    expect(r.status).toBe(201);
    await waitForStatus(t, admin, r.body.runId, ['waiting-approval']);
    return r.body.runId as string;
  }

  async function gateOf(runId: string): Promise<{ id: string; state: string; decisions: Array<{ reason?: string }> }> {
    const list = await t.http('GET', '/v1/approvals?limit=500', { token: admin });
    const gate = (list.body.approvals as Array<{ id: string; subject: { id: string } }>).find((a) => a.subject.id === runId);
    if (!gate) throw new Error(`no gate for run ${runId}`);
    return (await t.http('GET', `/v1/approvals/${gate.id}`, { token: admin })).body;
  }

  beforeAll(async () => {
    ({ chrome, t } = await startBrowserAndHost(() => createTestApp({ openApi: false, env: { OPENWOP_PROPOSALS_ACTIVATION: 'approval-gate', OPENWOP_JWT_SECRET: jwtSecret } })));
    driver = new ConsoleDriver(chrome, await listen(t));
    admin = await t.key({ tenant: 'acme', principal: 'ada', roles: ['admin'] });
    await installChains(t, 'acme', 'private.acme.gated-chains', {
      'acme.gated': {
        nodes: [
          { id: 'prep', typeId: 'core.noop', config: { v: 1 } },
          { id: 'gate', typeId: 'core.approval', config: { title: 'Ship it?' } },
          { id: 'ship', typeId: 'core.noop', config: { shipped: true } },
        ],
        edges: [{ from: 'prep', to: 'gate' }, { from: 'gate', to: 'ship' }],
      },
    });
  }, 120_000);

  afterEach(async () => {
    await driver?.closePages();
  });

  afterAll(async () => {
    await driver?.close();
    await chrome?.close();
    await t?.close();
  });

  it('a run waiting on an approval step shows its gate with Grant; granting it moves the drawing on to completed', async () => {
    const runId = await gatedRun();
    const page = await driver.signIn(admin, 'Runs', `runs/${runId}`);
    const gateNode = dagNode(page, 'gate');
    const ship = dagNode(page, 'ship');
    await eventually(gateNode.status, 'waiting', 'the gate node');
    expect(await gateNode.fill()).toBe(FILL.waiting);
    expect([await ship.status(), await ship.fill()]).toEqual(['pending', FILL.pending]);
    expect(await dagNode(page, 'prep').fill()).toBe(FILL.completed);
    const gate = page.getByRole('group', { name: 'Approval gate for approval for node gate' });
    await gate.waitFor();
    expect(await gate.textContent()).toContain('Ship it?');
    await gate.getByText('0 of 1 granted').waitFor();
    await expectAccessible(page);
    await shot(page, '11-run-waiting-approval');

    await gate.getByLabel('Reason (optional, recorded with the decision)').fill('checked the release notes');
    await page.getByRole('button', { name: 'Grant approval for node gate' }).click();
    // The run resumes: the gate node and then the last one are drawn completed, and the gate panel goes away.
    await eventually(gateNode.status, 'completed', 'the gate node');
    await eventually(ship.status, 'completed', 'the ship node');
    expect([await gateNode.fill(), await ship.fill()]).toEqual([FILL.completed, FILL.completed]);
    await page.locator('dl.facts .badge-completed').first().waitFor();
    await gate.waitFor({ state: 'detached' });
    await page.getByRole('list', { name: 'Run events' }).getByText('node.resumed [gate]').waitFor();
    // The timeline shows the time spent waiting for the decision.
    await page.getByRole('table', { name: 'Nodes' }).getByRole('row', { name: /^gate completed/ }).getByText(/waiting$/).waitFor();
    await shot(page, '11-run-approval-granted');
    const decided = await gateOf(runId);
    expect(decided.state).toBe('granted');
    expect(decided.decisions[0].reason).toBe('checked the release notes');
    expect((await waitForStatus(t, admin, runId, ['completed'])).status).toBe('completed');
  });

  it('denying the gate from the run page fails the step (approval_denied) and skips what follows', async () => {
    const runId = await gatedRun();
    const page = await driver.signIn(admin, 'Runs', `runs/${runId}`);
    await eventually(dagNode(page, 'gate').status, 'waiting', 'the gate node');
    await page.getByRole('button', { name: 'Deny approval for node gate' }).click();
    await eventually(dagNode(page, 'gate').status, 'failed', 'the gate node');
    expect(await dagNode(page, 'gate').fill()).toBe(FILL.failed);
    await eventually(dagNode(page, 'ship').status, 'skipped', 'the ship node');
    await page.locator('dd.run-error code', { hasText: 'approval_denied' }).waitFor();
    expect((await gateOf(runId)).state).toBe('denied');
  });

  it('the Approvals page lists every pending gate with its title, run, node and workflow, links to the run, and decides', async () => {
    const first = await gatedRun();
    const second = await gatedRun();
    const proposal = await t.api(admin).POST('/v1/proposals', {
      body: { kind: 'prompt-template', title: 'Acme gated template', artifact: { templateId: 'acme.listed', version: '1.0.0', kind: 'system', text: 'Listed.' }, provenance: { sourceRunIds: [] } },
    });
    expect((await t.api(admin).POST('/v1/proposals/{id}/apply', { params: { path: { id: proposal.data!.id } } })).data!.status).toBe('pending-approval');
    const page = await driver.signIn(admin, 'Approvals');
    await expectPages(page, ['Runs', 'Approvals', 'Workflows', 'Automations', 'Tools', 'Proposals', 'Goals', 'Connections', 'Portability', 'MCP']);
    const table = page.getByRole('table', { name: 'Approval gates' });
    const rowOf = (runId: string) => table.getByRole('row').filter({ has: page.getByRole('link', { name: `Run ${runId}` }) });
    for (const runId of [first, second]) {
      const row = rowOf(runId);
      await row.waitFor();
      const cells = await row.getByRole('cell').allTextContents();
      expect(cells.slice(0, 6)).toEqual(['Ship it?', expect.stringContaining(`run ${runId.slice(0, 8)}`), 'gate', 'acme.gated', 'ada', '0 of 1']);
    }
    const proposalRow = table.getByRole('row').filter({ has: page.getByRole('link', { name: `Proposal ${proposal.data!.id}` }) });
    expect(await proposalRow.getByRole('cell').first().textContent()).toBe('Acme gated template');
    await expectAccessible(page);
    await shot(page, '12-approvals');

    await page.getByRole('button', { name: `Grant gate for run ${first} node gate` }).click();
    await page.getByText(/^The gate is now granted: Ship it\?\.$/).waitFor();
    await rowOf(first).waitFor({ state: 'detached' });
    expect((await waitForStatus(t, admin, first, ['completed'])).status).toBe('completed');
    // Past decisions are listed by state.
    await page.getByLabel('State').selectOption('granted');
    await rowOf(first).getByRole('cell', { name: 'granted', exact: true }).waitFor();
    await page.getByLabel('State').selectOption('pending');
    // The run link opens the run at its address, waiting on its gate.
    await rowOf(second).getByRole('link', { name: `Run ${second}` }).click();
    await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
    expect(page.url()).toContain(`#/runs/${second}`);
    await page.getByRole('button', { name: 'Grant approval for node gate' }).click();
    await eventually(dagNode(page, 'ship').status, 'completed', 'the ship node');
  });

  it('scopes: without approvals:respond a waiting gate shows no decision and there is no Approvals page; without runs:read the list still names the run step', async () => {
    const runId = await gatedRun();
    const reader = await t.key({ tenant: 'acme', principal: 'rita', scopes: ['runs:read'] });
    const page = await driver.signIn(reader, 'Runs', `runs/${runId}`);
    const gate = page.getByRole('group', { name: 'Approval gate for approval for node gate' });
    await gate.getByText(/^Deciding needs the approvals:respond scope/).waitFor();
    expect(await page.getByRole('button', { name: /^(Grant|Deny) / }).count()).toBe(0);
    await expectPages(page, ['Runs']);
    await shot(page, '11-run-waiting-approval-reader');

    const approver = await t.key({ tenant: 'acme', principal: 'abe', scopes: ['approvals:respond'] });
    const list = await driver.signIn(approver, 'Approvals');
    const row = list.getByRole('table', { name: 'Approval gates' }).getByRole('row').filter({ has: list.getByRole('link', { name: `Run ${runId}` }) });
    await row.waitFor();
    // Title, node and workflow come from the gate itself: no read of the run is needed.
    expect((await row.getByRole('cell').allTextContents()).slice(0, 4)).toEqual(['Ship it?', expect.stringContaining('run '), 'gate', 'acme.gated']);
    await row.getByRole('button', { name: `Deny gate for run ${runId} node gate` }).click();
    await row.waitFor({ state: 'detached' });
    expect((await gateOf(runId)).state).toBe('denied');
  });

  it('signs in with a JWT; applying a proposal opens its gate, granted where the proposal is shown; another is denied from the Approvals page', async () => {
    const created = await t.api(admin).POST('/v1/proposals', {
      body: { kind: 'prompt-template', title: 'Gated template', artifact: { templateId: 'acme.gated', version: '1.0.0', kind: 'system', text: 'Gated.' }, provenance: { sourceRunIds: [] } },
    });
    expect(created.response.status).toBe(201);
    const page = await driver.open('proposals');
    const token = jwt.sign({ tenant: 'acme', roles: ['admin'] }, jwtSecret, { algorithm: 'HS256', subject: 'jo', expiresIn: 300 });
    await page.getByLabel('Bearer token (JWT)').check();
    await page.getByLabel('Bearer token', { exact: true }).fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('jo · acme').waitFor();
    expect(await page.evaluate('Object.values(sessionStorage)')).toEqual([token]);
    await page.getByRole('link', { name: 'Gated template', exact: true }).click();
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText(/^Waiting for approval: gate/).waitFor();
    const grant = page.getByRole('button', { name: `Grant gate for proposal ${created.data!.id}` });
    await grant.waitFor();
    await expectAccessible(page);
    await shot(page, '02-proposals-approval-gate');
    await grant.click();
    // The proposal on screen follows the decision.
    await page.locator('dl.facts .badge-applied').waitFor();
    await grant.waitFor({ state: 'detached' });
    const stored = await t.api(admin).GET('/v1/proposals/{id}', { params: { path: { id: created.data!.id } } });
    expect(stored.data!.state).toBe('applied');

    // A second one is denied from the Approvals page, with a reason: nothing is installed.
    const second = await t.api(admin).POST('/v1/proposals', {
      body: { kind: 'prompt-template', title: 'Denied template', artifact: { templateId: 'acme.denied', version: '1.0.0', kind: 'system', text: 'No.' }, provenance: { sourceRunIds: [] } },
    });
    const opened = await t.api(admin).POST('/v1/proposals/{id}/apply', { params: { path: { id: second.data!.id } } });
    const gateId = opened.data!.pendingApprovalId!;
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Approvals' }).click();
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: `Proposal ${second.data!.id}` }) });
    await row.getByLabel('Reason (optional, recorded with the decision)').fill('not needed');
    await row.getByRole('button', { name: `Deny gate for proposal ${second.data!.id}` }).click();
    await page.getByText(/^The gate is now denied: Denied template\.$/).waitFor();
    const gate = await t.api(admin).GET('/v1/approvals/{id}', { params: { path: { id: gateId } } });
    expect(gate.data!.state).toBe('denied');
    expect(gate.data!.decisions[0].reason).toBe('not needed');
    expect((await t.http('GET', '/v1/prompt-templates/acme.denied', { token: admin })).status).toBe(404);
  });
});
