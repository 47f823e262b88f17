import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ApiKeyService } from '../../src/platform/identity/api-key.service';
import type { RunningBrowser } from '../support/browser';
import { installChains, waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';
import { ConsoleDriver, expectAccessible, expectPages, goTo, listen, SCREENSHOT_DIR, shot, startBrowserAndHost } from './console-kit';

/**
 * The operator console in a real headless Chromium against a real host on a test database, listening
 * on a loopback port: sign-in, each page's main task, deep links, tenant isolation, scope-driven UI,
 * keyboard use and an axe-core accessibility check. The run view and approvals have their own files.
 * Screenshots land in test/.tmp/console-screenshots.
 */
const TOOL_CONFIG = {
  tools: {
    hostExtensions: [
      {
        toolId: 'x-host-acme-invoice-lookup',
        title: 'Invoice lookup',
        description: 'Finds an invoice by number.',
        safetyTier: 'read',
        inputSchema: { type: 'object', required: ['number'], properties: { number: { type: 'string', pattern: '^INV-[0-9]+$' } } },
        outputSchema: { type: 'object', properties: { total: { type: 'number' } } },
      },
      { toolId: 'x-host-acme-refund', title: 'Refund', description: 'Refunds a payment.', safetyTier: 'write' },
    ],
  },
};

describe('operator console in a browser', () => {
  let t: TestApp;
  let chrome: RunningBrowser;
  let driver: ConsoleDriver;
  let adminA: string;
  let viewerA: string;
  let adminB: string;
  let proposalA: { id: string; title: string };
  let goalA: string;
  let runA: string;
  let runB: string;

  const openConsole = (route?: string) => driver.open(route);
  const signIn = (token: string, pageName?: string) => driver.signIn(token, pageName);

  beforeAll(async () => {
    ({ chrome, t } = await startBrowserAndHost(() => createTestApp({ openApi: false, configFile: TOOL_CONFIG, env: { OPENWOP_CREDENTIAL_KEYS: `c1:${randomBytes(32).toString('base64')}` } })));
    driver = new ConsoleDriver(chrome, await listen(t));
    adminA = await t.key({ tenant: 'acme', principal: 'ada', roles: ['admin'] });
    viewerA = await t.key({ tenant: 'acme', principal: 'vic', roles: ['viewer'] });
    adminB = await t.key({ tenant: 'globex', principal: 'bob', roles: ['admin'] });

    const proposal = await t.api(adminA).POST('/v1/proposals', {
      body: {
        kind: 'prompt-template',
        title: 'Acme weekly summary template',
        rationale: 'Seen in three runs',
        artifact: { templateId: 'acme.weekly', version: '1.0.0', kind: 'system', text: 'Summarize the week for Acme.' },
        provenance: { sourceRunIds: ['run-1', 'run-2'] },
      },
    });
    expect(proposal.response.status).toBe(201);
    proposalA = { id: proposal.data!.id, title: 'Acme weekly summary template' };
    const other = await t.api(adminB).POST('/v1/proposals', {
      body: { kind: 'prompt-template', title: 'Globex secret plan', artifact: { templateId: 'globex.plan', version: '1.0.0', kind: 'system', text: 'Globex only.' }, provenance: { sourceRunIds: [] } },
    });
    expect(other.response.status).toBe(201);
    const goal = await t.http('POST', '/v1/goals', {
      token: adminA,
      body: {
        objective: 'Keep the Acme release checklist green',
        completion: { check: 'host' },
        criteria: { type: 'object', required: ['green'], properties: { green: { const: true } } },
        continuation: { mode: 'manual' },
        bounds: { maxLoopIterations: 5, maxCostUsd: 10 },
      },
    });
    expect(goal.status).toBe(201);
    goalA = goal.body.id;
    expect((await t.http('POST', `/v1/goals/${goalA}/runs`, { token: adminA, body: { runId: 'run-a1', costUsd: 1.5, output: { green: false } } })).status).toBe(200);
    const slack = await t.api(adminA).POST('/v1/connections', { body: { name: 'acme-slack', provider: 'slack', credential: `xoxb-${randomBytes(8).toString('hex')}` } });
    expect(slack.response.status).toBe(201);
    const goalB = await t.http('POST', '/v1/goals', {
      token: adminB,
      body: { objective: 'Globex quarterly target', completion: { check: 'host' }, criteria: { type: 'object' }, continuation: { mode: 'manual' }, bounds: { maxLoopIterations: 3 } },
    });
    expect(goalB.status).toBe(201);

    // One run per tenant, for the tenant isolation of the Runs page.
    await installChains(t, 'acme', 'private.acme.console-chains', { 'acme.quick': { nodes: [{ id: 'hello', typeId: 'core.noop', config: { greeting: 'hello' } }], edges: [] } });
    await installChains(t, 'globex', 'private.globex.console-chains', { 'globex.quick': { nodes: [{ id: 'hello', typeId: 'core.noop', config: { greeting: 'hi' } }], edges: [] } });
    const a = await t.http('POST', '/v1/runs', { token: adminA, body: { workflowId: 'acme.quick' } });
    const b = await t.http('POST', '/v1/runs', { token: adminB, body: { workflowId: 'globex.quick' } });
    expect([a.status, b.status]).toEqual([201, 201]);
    runA = a.body.runId;
    runB = b.body.runId;
    await waitForStatus(t, adminA, runA, ['completed']);
    await waitForStatus(t, adminB, runB, ['completed']);
  }, 120_000);

  afterEach(async () => {
    await driver?.closePages();
  });

  afterAll(async () => {
    await driver?.close();
    await chrome?.close();
    await t?.close();
  });

  it('signs in with an API key kept in sessionStorage only, and shows the canonical error for a bad key', async () => {
    const page = await openConsole();
    await expectAccessible(page);
    await shot(page, '00-sign-in');
    await page.getByLabel('API key').fill('owk_bogus_bogus');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.locator('.error-code').textContent()).toBe('unauthenticated');
    expect(await alert.locator('.error-message').textContent()).toBe('The API key is not valid.');

    await page.getByLabel('API key').fill(adminA);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    expect(await page.evaluate('Object.values(sessionStorage)')).toEqual([adminA]);
    expect(await page.evaluate('Object.values(localStorage)')).toEqual([]);
    expect(page.url()).not.toContain(adminA);
    expect(await page.locator('body').textContent()).not.toContain(adminA);
    // A reload keeps the session; signing out forgets the key.
    await page.reload();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate('Object.keys(sessionStorage)')).toEqual([]);
  });

  it('a key revoked mid-session sends the console back to sign-in, saying why, and forgets the key', async () => {
    const keys = t.app.get(ApiKeyService);
    const { key, view } = await keys.create({ tenant: 'acme', principal: 'temp', roles: ['viewer'] });
    const page = await signIn(key);
    await keys.revoke(view.id, 'acme');
    await goTo(page, 'Goals').catch(() => undefined);
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.locator('.error-code').textContent()).toBe('unauthenticated');
    expect(await alert.locator('.error-message').textContent()).toBe('The API key has been revoked.');
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate('Object.keys(sessionStorage)')).toEqual([]);
  });

  it('finds a tool by search, source and safety tier, and shows its descriptor with schemas', async () => {
    const page = await signIn(adminA, 'Tools');
    await expectPages(page, ['Runs', 'Approvals', 'Workflows', 'Automations', 'Tools', 'Proposals', 'Goals', 'Connections', 'Portability', 'MCP']);
    await page.getByRole('row', { name: /x-host-acme-refund/ }).waitFor();
    await page.getByLabel('Search').fill('invoice');
    await page.getByLabel('Source').selectOption('host-extension');
    await page.getByLabel('Safety tier').selectOption('read');
    await page.getByText(/^1 of \d+ tools$/).waitFor();
    expect(await page.getByRole('row', { name: /x-host-acme-refund/ }).count()).toBe(0);
    await page.getByRole('link', { name: 'Show tool x-host-acme-invoice-lookup' }).click();
    const input = page.getByRole('figure').filter({ hasText: 'Input schema' });
    await input.waitFor();
    // The tool has its own address: it opens again from the link, in a fresh tab signed in afresh.
    expect(page.url()).toMatch(/#\/tools\/x-host-acme-invoice-lookup$/);
    const linked = await driver.signIn(adminA, 'Tools', 'tools/x-host-acme-invoice-lookup');
    await linked.getByRole('heading', { level: 2, name: 'Tool x-host-acme-invoice-lookup' }).waitFor();
    await linked.getByRole('link', { name: 'Close detail' }).click();
    await linked.getByRole('heading', { level: 2, name: 'Tool x-host-acme-invoice-lookup' }).waitFor({ state: 'detached' });
    expect(linked.url()).toMatch(/#\/tools$/);
    expect(await input.textContent()).toContain('^INV-[0-9]+$');
    expect(await page.getByRole('figure').filter({ hasText: 'Output schema' }).textContent()).toContain('"total"');
    await expectAccessible(page);
    await shot(page, '01-tools');
    await page.getByLabel('Compact view (RFC 0112)').check();
    await page.getByRole('figure').filter({ hasText: 'Output schema' }).waitFor({ state: 'detached' });
    await page.getByRole('figure').filter({ hasText: 'Input schema' }).waitFor();
    await shot(page, '01-tools-compact');
  });

  it('reviews a proposal: revises it with a side-by-side diff, compares revisions, then applies it', async () => {
    const page = await signIn(adminA, 'Proposals');
    await page.getByRole('link', { name: proposalA.title }).click();
    expect(page.url()).toContain(`#/proposals/${proposalA.id}`);
    const editor = page.getByLabel('Artifact (JSON)');
    await editor.waitFor();
    const current = JSON.parse(await editor.inputValue());
    await editor.fill(JSON.stringify({ ...current, text: 'Summarize the week for Acme, with open risks.' }, null, 2));
    const diff = page.getByRole('region', { name: 'Differences between Current revision and Your edit' });
    await diff.waitFor();
    expect(await diff.locator('td.del').textContent()).toContain('Summarize the week for Acme.');
    expect(await diff.locator('td.add').textContent()).toContain('with open risks');
    await page.getByRole('button', { name: 'Save revision' }).click();
    await page.getByText('Revision saved.').waitFor();
    const compare = page.getByRole('region', { name: /Differences between Revision 1 .* and Revision 2/ });
    await compare.waitFor();
    expect(await compare.locator('td.add').textContent()).toContain('with open risks');
    // The revisions seen stay comparable after a reload of the tab, which opens the same proposal (its address).
    await page.reload();
    await compare.waitFor();
    expect(await compare.locator('td.del').textContent()).toContain('Summarize the week for Acme.');
    await expectAccessible(page);
    await shot(page, '02-proposals-review');

    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText(/^Applied: installed as/).waitFor();
    const stored = await t.api(adminA).GET('/v1/proposals/{id}', { params: { path: { id: proposalA.id } } });
    expect(stored.data!.state).toBe('applied');
    expect((stored.data!.artifact as { text: string }).text).toBe('Summarize the week for Acme, with open risks.');
    const template = await t.http('GET', '/v1/prompt-templates/acme.weekly', { token: adminA });
    expect(template.status).toBe(200);
    // Applied: no further review actions are offered.
    expect(await page.getByRole('button', { name: /^(Apply|Reject)$/ }).count()).toBe(0);
    await shot(page, '02-proposals-applied');
  });

  it('shows a goal against its bounds with its verdict history, and pauses it', async () => {
    // Opened by its address.
    const page = await driver.signIn(adminA, 'Goals', `goals/${goalA}`);
    const iterations = page.getByRole('progressbar', { name: 'Iterations' });
    await iterations.waitFor();
    expect(await iterations.getAttribute('value')).toBe('1');
    expect(await iterations.getAttribute('max')).toBe('5');
    await page.getByText('1.50 of 10.00').waitFor();
    await page.getByRole('table', { name: 'Runs judged for this goal' }).getByRole('row', { name: /run-a1/ }).waitFor();
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByText(/^Paused:/).waitFor();
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    const status = await t.api(adminA).GET('/v1/goals/{id}/status', { params: { path: { id: goalA } } });
    expect(status.data!.paused).toBe(true);
    await expectAccessible(page);
    await shot(page, '03-goals');
  });

  it('shows the consent plan before a credential can be set, and never shows the credential', async () => {
    const page = await signIn(adminA, 'Connections');
    await page.getByRole('button', { name: 'Connect to github' }).click();
    const plan = page.getByRole('list', { name: 'Consent steps' });
    await plan.waitFor();
    expect(await plan.textContent()).toContain('Step 1: read access');
    expect(await page.getByLabel(/^Credential/).count()).toBe(0);
    await page.getByLabel('Also plan write access').check();
    await page.getByText('Step 2: write access (a separate re-consent)').waitFor();
    await expectAccessible(page);
    await shot(page, '04-connections-consent-plan');

    await page.getByRole('button', { name: 'I have reviewed the plan: set a credential' }).click();
    const secret = `ghp_${randomBytes(12).toString('hex')}`;
    await page.getByLabel('Connection name').fill('acme-github');
    await page.getByLabel(/^Credential/).fill(secret);
    await page.getByRole('button', { name: 'Create connection' }).click();
    await page.getByText(/^Connection created/).waitFor();
    const row = page.getByRole('row', { name: /acme-github/ });
    await row.waitFor();
    expect(await row.textContent()).toContain('bound');
    expect(await page.content()).not.toContain(secret);
    await shot(page, '04-connections');

    // Rotate (write-only again), then delete.
    const rotated = `ghp_${randomBytes(12).toString('hex')}`;
    await page.getByRole('button', { name: 'Rotate credential of acme-github' }).click();
    await page.getByLabel('New credential for acme-github').fill(rotated);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Credential of acme-github rotated.').waitFor();
    expect(await page.content()).not.toContain(rotated);
    const conn = (await t.api(adminA).GET('/v1/connections')).data!.connections.find((c) => c.name === 'acme-github')!;
    expect(conn.credentialBound).toBe(true);
    expect(JSON.stringify(conn)).not.toContain(rotated);
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Delete acme-github' }).click();
    await page.getByText('Connection acme-github deleted.').waitFor();
    await row.waitFor({ state: 'detached' });
    expect((await t.api(adminA).GET('/v1/connections/{id}', { params: { path: { id: conn.id } } })).response.status).toBe(404);
  });

  it('plans an import as a dry run (nothing written) before applying it, with the plan shown', async () => {
    const digest = await t.api(adminA).POST('/v1/proposals', {
      body: { kind: 'prompt-template', title: 'Digest', artifact: { templateId: 'acme.digest', version: '1.0.0', kind: 'system', text: 'Digest.' }, provenance: { sourceRunIds: [] } },
    });
    expect((await t.api(adminA).POST('/v1/proposals/{id}/apply', { params: { path: { id: digest.data!.id } } })).response.status).toBe(200);
    const exported = await t.http('GET', '/v1/export', { token: adminA });
    expect(exported.status).toBe(200);
    const page = await signIn(adminB, 'Portability');
    await page.getByLabel('Bundle file (JSON)').setInputFiles({ name: 'acme-export.json', mimeType: 'application/json', buffer: Buffer.from(exported.text) });
    await page.getByRole('button', { name: 'Plan import (dry run)' }).click();
    const plan = page.getByRole('region', { name: 'Dry-run plan' });
    await plan.waitFor();
    expect(await plan.textContent()).toMatch(/to create/);
    expect(await plan.getByRole('row', { name: /prompt-template:acme\.digest/ }).textContent()).toContain('create');
    // The dry run wrote nothing in tenant B.
    expect((await t.http('GET', '/v1/prompt-templates/acme.digest', { token: adminB })).status).toBe(404);
    await expectAccessible(page);
    await shot(page, '05-portability-dry-run');

    await page.getByRole('button', { name: 'Apply import' }).click();
    await page.getByRole('region', { name: 'Import result' }).waitFor();
    expect((await t.http('GET', '/v1/prompt-templates/acme.digest', { token: adminB })).status).toBe(200);

    // Export: the bundle is downloaded as a file, and it is tenant B's own estate.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download export' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^openwop-export-globex-.*\.json$/);
    const file = path.join(SCREENSHOT_DIR, '..', 'console-export.json');
    await download.saveAs(file);
    const bundle = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(bundle.source.origin).toContain('globex');
    expect(bundle.items.map((i: { ref: string }) => i.ref)).toContain('prompt-template:acme.digest');
    await page.getByText(/^Exported \d+ items? \(\d+ bytes\)/).waitFor();
    await shot(page, '05-portability-applied');
  });

  it('a server error in an action is shown with its canonical error and message', async () => {
    const page = await signIn(adminA, 'Portability');
    await page.getByLabel('…or paste the bundle').fill('{"bundleVersion": "nope", "items": "x"}');
    await page.getByRole('button', { name: 'Plan import (dry run)' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.locator('.error-code').textContent()).toMatch(/^[a-z_]+$/);
    expect((await alert.locator('.error-message').textContent())!.length).toBeGreaterThan(0);
    await shot(page, '06-error');
  });

  it('two tenants each see only their own proposals, goals and runs', async () => {
    const b = await signIn(adminB, 'Proposals');
    await b.getByRole('link', { name: 'Globex secret plan' }).waitFor();
    expect(await b.getByText(proposalA.title).count()).toBe(0);
    await goTo(b, 'Goals');
    await b.getByRole('link', { name: 'Globex quarterly target' }).waitFor();
    expect(await b.getByText('Keep the Acme release checklist green').count()).toBe(0);
    await shot(b, '07-tenant-b-goals');

    const a = await signIn(adminA, 'Proposals');
    await a.getByRole('link', { name: proposalA.title }).waitFor();
    expect(await a.getByText('Globex secret plan').count()).toBe(0);

    // Runs: each tenant's list holds its own runs only, and another tenant's run id is unknown.
    await goTo(b, 'Runs');
    await b.getByRole('link', { name: `Run ${runB}` }).waitFor();
    expect(await b.getByText('acme.').count()).toBe(0);
    expect(await b.getByText(/^1 run shown$/).count()).toBe(1);
    await goTo(a, 'Runs');
    await a.getByRole('link', { name: `Run ${runA}` }).waitFor();
    expect(await a.getByRole('link', { name: `Run ${runB}` }).count()).toBe(0);
    expect(await a.getByText('globex.quick').count()).toBe(0);
    await shot(b, '07-tenant-b-runs');
  });

  it('a viewer key sees every page it may read and no write action anywhere', async () => {
    const page = await signIn(viewerA);
    await expectPages(page, ['Runs', 'Workflows', 'Automations', 'Tools', 'Proposals', 'Goals', 'Connections', 'MCP']);
    const writes = /^(Apply|Reject|Archive|Save revision|Grant|Deny|Pause|Resume|Abandon|Connect…|Rotate|Delete|Uninstall|Download export|Plan import \(dry run\)|Apply import)$/;
    await goTo(page, 'Proposals');
    await page.getByRole('link', { name: proposalA.title }).click();
    await page.getByRole('heading', { name: proposalA.title, level: 2 }).waitFor();
    expect(await page.getByLabel('Artifact (JSON)').count()).toBe(0);
    expect(await page.getByRole('button', { name: writes }).count()).toBe(0);
    await shot(page, '08-viewer-proposals');
    await goTo(page, 'Goals');
    await page.getByRole('link', { name: 'Keep the Acme release checklist green' }).click();
    await page.getByRole('progressbar', { name: 'Iterations' }).waitFor();
    expect(await page.getByRole('button', { name: writes }).count()).toBe(0);
    await goTo(page, 'Connections');
    await page.getByRole('row', { name: /acme-slack/ }).waitFor();
    expect(await page.getByRole('button', { name: writes }).count()).toBe(0);
    await shot(page, '08-viewer-connections');
    // The Portability and Approvals pages are not reachable by their addresses either.
    for (const route of ['portability', 'approvals']) {
      await page.goto(`${driver.base}/console/#/${route}`);
      await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
    }
  });

  it('can be used from the keyboard: sign in with Enter, skip link, pages reachable by Tab', async () => {
    const page = await openConsole();
    await page.getByLabel('API key').focus();
    await page.keyboard.type(adminA);
    await page.keyboard.press('Enter');
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    const focused = () => page.evaluate("document.activeElement ? document.activeElement.textContent : ''");
    // From the top of the page: the skip link, then the page links in order.
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Skip to content');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Runs');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Approvals');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Approvals' }).waitFor();
    // A new page puts focus at the start of its content.
    await page.waitForFunction("document.activeElement !== null && document.activeElement.id === 'main'", undefined, { timeout: 5000 });
    await page.keyboard.press('Tab');
    expect(await page.evaluate("document.activeElement !== null && document.activeElement.closest('main') !== null")).toBe(true);
    // The skip link jumps over the navigation.
    await page.reload();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Skip to content');
    await page.keyboard.press('Enter');
    await page.waitForFunction("document.activeElement !== null && document.activeElement.id === 'main'", undefined, { timeout: 5000 });
  });
});
