import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import jwt from 'jsonwebtoken';
import type { BrowserContext, Page } from 'playwright-core';
import { ApiKeyService } from '../../src/platform/identity/api-key.service';
import { buildConsole, launchChromium, RunningBrowser, SCREENSHOT_DIR } from '../support/browser';
import { installChains, waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';

/**
 * The operator console in a real headless Chromium against a real host on a test database, listening
 * on a loopback port: sign-in, each page's main task, tenant isolation, scope-driven UI, keyboard use
 * and an axe-core accessibility check. Screenshots land in test/.tmp/console-screenshots.
 */
const AXE_SOURCE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
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
  let base: string;
  let adminA: string;
  let viewerA: string;
  let adminB: string;
  let proposalA: { id: string; title: string };
  let goalA: string;
  /** The acme run that failed on its RFC 0058 loop bound. */
  let failedRunA: string;
  /** The quick acme runs (newest last), and the globex one. */
  const quickRunsA: string[] = [];
  let runB: string;
  /** A second host: proposals activated through approval gates, and bearer JWTs accepted. */
  let gated: TestApp;
  const jwtSecret = randomBytes(32).toString('hex');
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    buildConsole();
    fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
    // Launch first: without Chromium the suite fails here, loudly, before anything else is set up.
    chrome = await launchChromium();
    [t, gated] = await Promise.all([
      createTestApp({ configFile: TOOL_CONFIG, env: { OPENWOP_CREDENTIAL_KEYS: `c1:${randomBytes(32).toString('base64')}` } }),
      createTestApp({ env: { OPENWOP_PROPOSALS_ACTIVATION: 'approval-gate', OPENWOP_JWT_SECRET: jwtSecret } }),
    ]);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.getHttpServer().address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
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

    // Runnable chains for each tenant: a quick one (one core.noop node) and, for acme, a slow one that waits
    // on a core.delay node until it is cancelled.
    await installChains(t, 'acme', 'private.acme.console-chains', {
      'acme.quick': { nodes: [{ id: 'hello', typeId: 'core.noop', config: { greeting: 'hello {{inputs.name}}' } }], edges: [] },
      'acme.slow': {
        nodes: [
          { id: 'hello', typeId: 'core.noop', config: { greeting: 'hello {{inputs.name}}' } },
          { id: 'wait', typeId: 'core.delay', config: { ms: 120_000 } },
        ],
        edges: [{ from: 'hello', to: 'wait' }],
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
    const b = await t.http('POST', '/v1/runs', { token: adminB, body: { workflowId: 'globex.quick' } });
    expect(b.status).toBe(201);
    runB = b.body.runId;
    for (const id of quickRunsA) await waitForStatus(t, adminA, id, ['completed']);
    await waitForStatus(t, adminA, failedRunA, ['failed']);
    await waitForStatus(t, adminB, runB, ['completed']);
  }, 120_000);

  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await chrome?.close();
    await Promise.all([t?.close(), gated?.close()]);
  });

  async function openConsole(pageName?: string): Promise<Page> {
    const context = await chrome.browser.newContext({ viewport: { width: 1360, height: 900 } });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${base}/console/${pageName ? `#/${pageName.toLowerCase()}` : ''}`);
    return page;
  }

  /** Signs in on the console's address for a page (`#/goals`), landing on that page. */
  async function signIn(token: string, pageName?: string): Promise<Page> {
    const page = await openConsole(pageName);
    await page.getByLabel('API key').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    if (pageName) await page.getByRole('heading', { level: 1, name: pageName }).waitFor();
    return page;
  }

  async function goTo(page: Page, name: string): Promise<void> {
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name }).click();
    await page.getByRole('heading', { level: 1, name }).waitFor();
  }

  /** The page links shown to the signed-in credential, in order. */
  async function expectPages(page: Page, expected: string[]): Promise<void> {
    const links = page.getByRole('navigation', { name: 'Pages' }).getByRole('link');
    await links.first().waitFor();
    expect(await links.allTextContents()).toEqual(expected);
  }

  async function shot(page: Page, name: string): Promise<void> {
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
  }

  /** axe-core in the page: no serious or critical violation. */
  async function expectAccessible(page: Page): Promise<void> {
    await page.evaluate(AXE_SOURCE);
    // Evaluated as source text: the test program is type-checked without the DOM library.
    const violations = (await page.evaluate(
      "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target) })))",
    )) as Array<{ id: string; impact: string; help: string; targets: unknown[] }>;
    expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);
  }

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
    const page = await signIn(adminA);
    await page.getByRole('heading', { level: 1, name: 'Tools' }).waitFor();
    await expectPages(page, ['Tools', 'Proposals', 'Goals', 'Connections', 'Runs', 'Portability']);
    await page.getByRole('row', { name: /x-host-acme-refund/ }).waitFor();
    await page.getByLabel('Search').fill('invoice');
    await page.getByLabel('Source').selectOption('host-extension');
    await page.getByLabel('Safety tier').selectOption('read');
    await page.getByText(/^1 of \d+ tools$/).waitFor();
    expect(await page.getByRole('row', { name: /x-host-acme-refund/ }).count()).toBe(0);
    await page.getByRole('button', { name: 'Show tool x-host-acme-invoice-lookup' }).click();
    const input = page.getByRole('figure').filter({ hasText: 'Input schema' });
    await input.waitFor();
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
    await page.getByRole('button', { name: proposalA.title }).click();
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
    // The revisions seen stay comparable after a reload of the tab.
    await page.reload();
    await page.getByRole('button', { name: proposalA.title }).click();
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
    const page = await signIn(adminA, 'Goals');
    await page.getByRole('button', { name: 'Keep the Acme release checklist green' }).click();
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

  it('signs in with a JWT where JWTs are configured; under approval-gate activation, apply opens a gate granted from the console', async () => {
    {
      await gated.app.listen({ port: 0, host: '127.0.0.1' });
      const address = gated.app.getHttpServer().address();
      const gatedBase = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      const admin = await gated.key({ tenant: 'acme', principal: 'ada', roles: ['admin'] });
      const created = await gated.api(admin).POST('/v1/proposals', {
        body: { kind: 'prompt-template', title: 'Gated template', artifact: { templateId: 'acme.gated', version: '1.0.0', kind: 'system', text: 'Gated.' }, provenance: { sourceRunIds: [] } },
      });
      expect(created.response.status).toBe(201);
      const context = await chrome.browser.newContext({ viewport: { width: 1360, height: 900 } });
      contexts.push(context);
      const page = await context.newPage();
      await page.goto(`${gatedBase}/console/#/proposals`);
      const token = jwt.sign({ tenant: 'acme', roles: ['admin'] }, jwtSecret, { algorithm: 'HS256', subject: 'jo', expiresIn: 300 });
      await page.getByLabel('Bearer token (JWT)').check();
      await page.getByLabel('Bearer token', { exact: true }).fill(token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('jo · acme').waitFor();
      expect(await page.evaluate('Object.values(sessionStorage)')).toEqual([token]);
      await page.getByRole('button', { name: 'Gated template' }).click();
      await page.getByRole('button', { name: 'Apply' }).click();
      await page.getByText(/^Waiting for approval: gate/).waitFor();
      const grant = page.getByRole('button', { name: `Grant gate for proposal ${created.data!.id}` });
      await grant.waitFor();
      await expectAccessible(page);
      await shot(page, '02-proposals-approval-gate');
      await grant.click();
      await page.getByText('No gate is waiting for a decision.').waitFor();
      // The proposal on screen follows the decision.
      await page.locator('dl.facts .badge-applied').waitFor();
      const stored = await gated.api(admin).GET('/v1/proposals/{id}', { params: { path: { id: created.data!.id } } });
      expect(stored.data!.state).toBe('applied');

      // A second one is denied, with a reason: nothing is installed.
      const second = await gated.api(admin).POST('/v1/proposals', {
        body: { kind: 'prompt-template', title: 'Denied template', artifact: { templateId: 'acme.denied', version: '1.0.0', kind: 'system', text: 'No.' }, provenance: { sourceRunIds: [] } },
      });
      const opened = await gated.api(admin).POST('/v1/proposals/{id}/apply', { params: { path: { id: second.data!.id } } });
      const gateId = opened.data!.pendingApprovalId!;
      await page.reload();
      await page.getByLabel('Reason (optional, recorded with the decision)').fill('not needed');
      await page.getByRole('button', { name: `Deny gate for proposal ${second.data!.id}` }).click();
      await page.getByText('No gate is waiting for a decision.').waitFor();
      const gate = await gated.api(admin).GET('/v1/approvals/{id}', { params: { path: { id: gateId } } });
      expect(gate.data!.state).toBe('denied');
      expect(gate.data!.decisions[0].reason).toBe('not needed');
      expect((await gated.http('GET', '/v1/prompt-templates/acme.denied', { token: admin })).status).toBe(404);
    }
  });

  it('Runs: starts a core.delay chain from the form, follows its live events over SSE (resuming with Last-Event-ID) and cancels it', async () => {
    const runsBefore = (await t.http('GET', '/v1/runs?limit=500', { token: adminA })).body.runs.length;
    const page = await signIn(adminA, 'Runs');
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
    await page.route(/\/v1\/runs\/[^/]+\/events$/, async (route) => {
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
    const heading = page.getByRole('heading', { level: 2, name: /^Run / });
    await heading.waitFor();
    const runId = ((await heading.textContent()) ?? '').replace(/^Run /, '');
    expect(await form.getByRole('alert').count()).toBe(0);
    const events = page.getByRole('list', { name: 'Run events' });
    await events.getByText('node.started [wait]').waitFor();
    // Every event once, in order, without a gap across the reconnect.
    const seqs = async () => (await events.getByRole('listitem').evaluateAll((li) => li.map((x) => Number(x.getAttribute('value')))));
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
    const nodes = page.getByRole('table', { name: 'Nodes' });
    // The node table: the snapshot's node states, updated from the events (the node in flight is in the
    // snapshot once the engine's batch is written, and known from its node.started event before that).
    await nodes.getByRole('row', { name: /^hello completed/ }).waitFor();
    await nodes.getByRole('row', { name: /^wait running/ }).waitFor();
    await page.locator('dl.facts .badge-running').waitFor();
    // The list shows the new run.
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.getByRole('row', { name: new RegExp(`${runId} acme.slow`) }).waitFor();
    await expectAccessible(page);
    await shot(page, '09-runs-live');

    await page.getByRole('button', { name: 'Cancel run', exact: true }).click();
    await page.getByRole('button', { name: 'Cancel this run' }).click();
    await events.getByText('run.cancelled').waitFor();
    await page.locator('dl.facts .badge-cancelled').waitFor();
    await nodes.getByRole('row', { name: /^wait cancelled/ }).waitFor();
    expect((await t.http('GET', `/v1/runs/${runId}`, { token: adminA })).body.status).toBe('cancelled');
    const all = await seqs();
    expect(all).toEqual(all.map((_, i) => i + 1));
    // Terminal: no cancel button any more, and the list follows.
    expect(await page.getByRole('button', { name: 'Cancel run', exact: true }).count()).toBe(0);
    await page.getByRole('row', { name: new RegExp(`${runId} acme.slow cancelled`) }).waitFor();
    expect(resumedWith).toEqual([String(droppedAfter)]);
    await shot(page, '09-runs-cancelled');
  });

  it('Runs: lists by status with "Load more", and shows a completed run\'s outputs and a failed run\'s error code', async () => {
    const page = await signIn(adminA, 'Runs');
    await page.getByLabel('Status').selectOption('completed');
    await page.getByText('10 runs shown, more on the host').waitFor();
    // Newest first: the oldest quick run is on the second page.
    expect(await page.getByRole('button', { name: quickRunsA[0] }).count()).toBe(0);
    await page.getByRole('button', { name: 'Load more' }).click();
    await page.getByText(/^11 runs shown$/).waitFor();
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    const shown = await page.getByRole('table', { name: 'Runs' }).locator('tbody tr td:first-child').allTextContents();
    expect(shown).toEqual([...quickRunsA].reverse());
    await page.getByRole('button', { name: quickRunsA[0] }).click();
    const outputs = page.getByRole('figure').filter({ hasText: 'Outputs' });
    await outputs.waitFor();
    expect(await outputs.textContent()).toContain('hello Ada-0');
    await page.getByRole('table', { name: 'Nodes' }).getByRole('row', { name: /^hello completed/ }).waitFor();
    await page.getByRole('list', { name: 'Run events' }).getByText('run.completed').waitFor();
    // Opening a run that had already ended keeps the pages loaded so far.
    await page.getByText(/^11 runs shown$/).waitFor();
    await expectAccessible(page);
    await shot(page, '09-runs-completed');

    await page.getByLabel('Status').selectOption('failed');
    await page.getByText(/^1 run shown$/).waitFor();
    await page.getByRole('button', { name: failedRunA }).click();
    await page.locator('dd.run-error code', { hasText: 'loop_limit' }).waitFor();
    await page.getByRole('list', { name: 'Run events' }).getByText('cap.breached').waitFor();
    expect(await page.getByRole('figure').filter({ hasText: 'Outputs' }).count()).toBe(0);
    await shot(page, '09-runs-failed');
  });

  it('Runs: a key without runs:cancel sees no cancel button, one without runs:create no start form', async () => {
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
        const page = await signIn(token, 'Runs');
        await page.getByRole('button', { name: runId }).click();
        await page.getByRole('list', { name: 'Run events' }).getByText('node.started [wait]').waitFor();
        await page.locator('dl.facts .badge-running').waitFor();
        expect(await page.getByRole('button', { name: 'Start run' }).count()).toBe(mayStart ? 1 : 0);
        expect(await page.getByRole('button', { name: 'Cancel run', exact: true }).count()).toBe(mayCancel ? 1 : 0);
        if (token === viewerA) await shot(page, '08-viewer-runs');
      }
    } finally {
      await t.http('POST', `/v1/runs/${runId}/cancel`, { token: adminA, body: {} });
    }
  });

  it('two tenants each see only their own proposals, goals and runs', async () => {
    const b = await signIn(adminB, 'Proposals');
    await b.getByRole('button', { name: 'Globex secret plan' }).waitFor();
    expect(await b.getByText(proposalA.title).count()).toBe(0);
    await goTo(b, 'Goals');
    await b.getByRole('button', { name: 'Globex quarterly target' }).waitFor();
    expect(await b.getByText('Keep the Acme release checklist green').count()).toBe(0);
    await shot(b, '07-tenant-b-goals');

    const a = await signIn(adminA, 'Proposals');
    await a.getByRole('button', { name: proposalA.title }).waitFor();
    expect(await a.getByText('Globex secret plan').count()).toBe(0);

    // Runs: each tenant's list holds its own runs only, and another tenant's run id is unknown.
    await goTo(b, 'Runs');
    await b.getByRole('button', { name: runB }).waitFor();
    expect(await b.getByText('acme.').count()).toBe(0);
    expect(await b.getByText(/^1 run shown$/).count()).toBe(1);
    await goTo(a, 'Runs');
    await a.getByRole('button', { name: quickRunsA[quickRunsA.length - 1] }).waitFor();
    expect(await a.getByRole('button', { name: runB }).count()).toBe(0);
    expect(await a.getByText('globex.quick').count()).toBe(0);
    await shot(b, '07-tenant-b-runs');
  });

  it('a viewer key sees every page it may read and no write action anywhere', async () => {
    const page = await signIn(viewerA);
    await expectPages(page, ['Tools', 'Proposals', 'Goals', 'Connections', 'Runs']);
    const writes = /^(Apply|Reject|Archive|Save revision|Grant|Deny|Pause|Resume|Abandon|Connect…|Rotate|Delete|Uninstall|Download export|Plan import \(dry run\)|Apply import)$/;
    await goTo(page, 'Proposals');
    await page.getByRole('button', { name: proposalA.title }).click();
    await page.getByRole('heading', { name: proposalA.title, level: 2 }).waitFor();
    expect(await page.getByLabel('Artifact (JSON)').count()).toBe(0);
    expect(await page.getByRole('button', { name: writes }).count()).toBe(0);
    await shot(page, '08-viewer-proposals');
    await goTo(page, 'Goals');
    await page.getByRole('button', { name: 'Keep the Acme release checklist green' }).click();
    await page.getByRole('progressbar', { name: 'Iterations' }).waitFor();
    expect(await page.getByRole('button', { name: writes }).count()).toBe(0);
    await goTo(page, 'Connections');
    await page.getByRole('row', { name: /acme-slack/ }).waitFor();
    expect(await page.getByRole('button', { name: writes }).count()).toBe(0);
    await shot(page, '08-viewer-connections');
    // The Portability page is not reachable by its address either.
    await page.goto(`${base}/console/#/portability`);
    await page.getByRole('heading', { level: 1, name: 'Tools' }).waitFor();
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
    expect(await focused()).toBe('Tools');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Proposals');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Proposals' }).waitFor();
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
