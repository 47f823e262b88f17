import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import jwt from 'jsonwebtoken';
import type { BrowserContext, Page } from 'playwright-core';
import { ApiKeyService } from '../../src/platform/identity/api-key.service';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { buildConsole, launchChromium, RunningBrowser, SCREENSHOT_DIR } from '../support/browser';
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

  /**
   * The page links, once the console has probed /v1/runs: `Runs` is expected only when this host serves
   * runs (GET /v1/runs is not a 404), the other pages as given.
   */
  async function expectPages(page: Page, pages: string[]): Promise<void> {
    const served = (await t.http('GET', '/v1/runs', { token: adminA })).status !== 404;
    const expected = pages.filter((p) => p !== 'Runs' || served);
    const links = page.getByRole('navigation', { name: 'Pages' }).getByRole('link');
    const deadline = Date.now() + 5000;
    let seen = await links.allTextContents();
    while (JSON.stringify(seen) !== JSON.stringify(expected) && Date.now() < deadline) {
      await page.waitForTimeout(100);
      seen = await links.allTextContents();
    }
    expect(seen).toEqual(expected);
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
    // The Runs page is offered exactly when the host serves runs.
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

  it('Runs: follows a run over SSE (resuming with Last-Event-ID) and cancels it, against the run-engine contract', async () => {
    // This host has no run engine yet, so the page is driven against the v1 contract (issue: run engine;
    // shapes from the published run-snapshot, run-event and run-event-payloads schemas): the browser's
    // requests to /v1/runs are answered here, and every answer is validated against those schemas first.
    const schemas = SchemaRegistry.shared();
    const payloads = 'https://openwop.dev/spec/v1/run-event-payloads.schema.json';
    const started = new Date(Date.now() - 5000).toISOString();
    const snapshot = (status: string) => ({ runId: 'run-7', workflowId: 'acme.nightly-report', status, startedAt: started, currentNodeId: 'fetch' });
    const event = (sequence: number, type: string, payload: Record<string, unknown>, def: string, nodeId?: string) => {
      const e = { eventId: `evt-${sequence}`, runId: 'run-7', type, payload, timestamp: new Date().toISOString(), sequence, ...(nodeId ? { nodeId } : {}) };
      expect(schemas.validate('run-event', e)).toEqual([]);
      expect(schemas.validateWith({ $ref: `${payloads}#/$defs/${def}` }, payload)).toEqual([]);
      return `id: ${sequence}\nevent: ${type}\ndata: ${JSON.stringify(e)}\n\n`;
    };
    const first = event(1, 'run.started', { workflowId: 'acme.nightly-report' }, 'runStarted') + event(2, 'node.started', { nodeId: 'fetch', typeId: 'core.delay' }, 'nodeStarted', 'fetch');
    const last = event(3, 'run.cancelled', { reason: 'cancelled from the console' }, 'runCancelled');
    let cancelled = false;
    const cancelAuth: string[] = [];
    const resumedFrom: string[] = [];
    const answer = (body: unknown, status = 200) => {
      if (status === 200 && typeof body === 'object' && body && 'status' in body) expect(schemas.validate('run-snapshot', body)).toEqual([]);
      return { status, contentType: 'application/json', body: JSON.stringify(body) };
    };

    const page = await (async () => {
      const context = await chrome.browser.newContext({ viewport: { width: 1360, height: 900 } });
      contexts.push(context);
      const p = await context.newPage();
      await p.route(
        (url) => url.pathname === '/v1/runs' || url.pathname.startsWith('/v1/runs/run-7'),
        async (route) => {
          const req = route.request();
          const url = new URL(req.url());
          if (url.pathname === '/v1/runs') {
            return route.fulfill(answer({ runs: [snapshot(cancelled ? 'cancelled' : 'running'), { ...snapshot('completed'), runId: 'run-6', currentNodeId: undefined }], nextCursor: null }));
          }
          if (url.pathname === '/v1/runs/run-7') return route.fulfill(answer(snapshot(cancelled ? 'cancelled' : 'running')));
          if (url.pathname === '/v1/runs/run-7/cancel' && req.method() === 'POST') {
            cancelAuth.push((await req.allHeaders()).authorization ?? '');
            cancelled = true;
            return route.fulfill(answer(snapshot('cancelling')));
          }
          if (url.pathname === '/v1/runs/run-7/events') {
            const lastId = (await req.allHeaders())['last-event-id'];
            if (lastId) resumedFrom.push(lastId);
            // The first connection delivers two events and drops; the resumed one continues after them.
            const body = !lastId ? first : cancelled ? last : ': keep-alive\n\n';
            return route.fulfill({ status: 200, contentType: 'text/event-stream', body });
          }
          return route.fulfill(answer({ error: 'not_found', message: 'No such run.' }, 404));
        },
      );
      await p.goto(`${base}/console/`);
      await p.getByLabel('API key').fill(adminA);
      await p.getByRole('button', { name: 'Sign in' }).click();
      await p.getByRole('navigation', { name: 'Pages' }).waitFor();
      return p;
    })();
    await goTo(page, 'Runs');
    await page.getByRole('row', { name: /run-6/ }).waitFor();
    await page.getByRole('button', { name: 'run-7' }).click();
    const events = page.getByRole('list', { name: 'Run events' });
    await events.getByText('node.started').waitFor();
    expect(await events.getByRole('listitem').count()).toBe(2);
    await expectAccessible(page);
    await shot(page, '09-runs');
    await page.getByRole('button', { name: 'Cancel run', exact: true }).click();
    await page.getByRole('button', { name: 'Cancel this run' }).click();
    await events.getByText('run.cancelled').waitFor();
    await page.locator('dl.facts .badge-cancelled').waitFor();
    expect(cancelAuth).toEqual([`Bearer ${adminA}`]);
    expect(resumedFrom.length).toBeGreaterThan(0);
    expect(new Set(resumedFrom)).toEqual(new Set(['2']));
    expect(await events.getByRole('listitem').allTextContents()).toEqual([
      expect.stringContaining('run.started'),
      expect.stringContaining('node.started [fetch]'),
      expect.stringContaining('run.cancelled'),
    ]);
    // Terminal: no cancel button any more.
    expect(await page.getByRole('button', { name: 'Cancel run', exact: true }).count()).toBe(0);
    await shot(page, '09-runs-cancelled');
  });

  it('two tenants each see only their own proposals and goals', async () => {
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
