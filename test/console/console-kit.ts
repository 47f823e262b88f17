import * as fs from 'node:fs';
import * as path from 'node:path';
import pixelmatch from 'pixelmatch';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { buildConsole, launchChromium, RunningBrowser, SCREENSHOT_DIR } from '../support/browser';
import type { TestApp } from '../support/test-app';

/**
 * What the console's browser tests share: a headless Chromium, a host listening on a loopback port, sign-in,
 * navigation, screenshots (written to test/.tmp/console-screenshots) and an axe-core accessibility check.
 */
const AXE_SOURCE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export { SCREENSHOT_DIR };

/** Builds the console when stale and starts Chromium; without Chromium the suite fails here, loudly. */
export async function startBrowser(): Promise<RunningBrowser> {
  buildConsole();
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  return launchChromium();
}

/**
 * Starts Chromium and boots the test host at the same time (Chromium's start overlaps the host's boot
 * instead of preceding it). When either fails, the one that started is closed before the error is thrown.
 */
export async function startBrowserAndHost(boot: () => Promise<TestApp>): Promise<{ chrome: RunningBrowser; t: TestApp }> {
  const [chrome, t] = await Promise.allSettled([startBrowser(), boot()]);
  if (chrome.status === 'fulfilled' && t.status === 'fulfilled') return { chrome: chrome.value, t: t.value };
  if (chrome.status === 'fulfilled') await chrome.value.close();
  if (t.status === 'fulfilled') await t.value.close();
  throw chrome.status === 'rejected' ? chrome.reason : (t as PromiseRejectedResult).reason;
}

/** Makes a test host listen on a free loopback port and answers its base address. */
export async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const address = t.app.getHttpServer().address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

export class ConsoleDriver {
  private readonly contexts: BrowserContext[] = [];

  constructor(
    private readonly chrome: RunningBrowser,
    readonly base: string,
  ) {}

  /** A fresh browser context (its own sessionStorage) at the console's address for `route` (`runs`, `runs/<id>`), 1360 px wide unless `width` says. */
  async open(route?: string, width = 1360): Promise<Page> {
    const context = await this.chrome.browser.newContext({ viewport: { width, height: 900 } });
    this.contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${this.base}/console/${route ? `#/${route}` : ''}`);
    return page;
  }

  /** Signs in with an API key on the address of `route`, landing there (`pageName`: the page's heading). */
  async signIn(token: string, pageName?: string, route?: string, width?: number): Promise<Page> {
    const page = await this.open(route ?? pageName?.toLowerCase(), width);
    await page.getByRole('textbox', { name: 'API key' }).fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    if (pageName) await page.getByRole('heading', { level: 1, name: pageName }).waitFor();
    return page;
  }

  /**
   * Closes every page opened so far: a page left open keeps its event streams and refreshes going,
   * load that slows every later test of the suite (run after each test).
   */
  async closePages(): Promise<void> {
    const open = this.contexts.splice(0);
    for (const c of open) await c.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.closePages();
  }
}

export async function goTo(page: Page, name: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name }).click();
  await page.getByRole('heading', { level: 1, name }).waitFor();
}

/** The page links shown to the signed-in credential, in order. */
export async function expectPages(page: Page, expected: string[]): Promise<void> {
  const links = page.getByRole('navigation', { name: 'Pages' }).getByRole('link');
  await links.first().waitFor();
  expect(await links.allTextContents()).toEqual(expected);
}

export async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}

/** The committed screenshots the console's pages are compared with (test/console/baselines/<name>.png). */
export const BASELINE_DIR = path.join(__dirname, 'baselines');
/** Share of a screenshot's pixels that may differ from its baseline (text anti-aliasing) before it counts as changed. */
const TOLERANCE = 0.002;

/**
 * Compares the full page with its committed baseline: same size, and at most 0.2 % of the pixels differing beyond
 * pixelmatch's colour threshold. What changes from run to run (run ids, times, durations: `mask`) is painted over
 * in both. With OPENWOP_UPDATE_SCREENSHOTS=1 the baseline is (re)written instead: review it before committing it.
 * A failure writes the screenshot and a diff image beside the other screenshots (test/.tmp/console-screenshots).
 */
export async function expectScreenshot(page: Page, name: string, mask: Locator[] = []): Promise<void> {
  const png = await page.screenshot({ fullPage: true, animations: 'disabled', caret: 'hide', mask, maskColor: '#ff00ff' });
  fs.writeFileSync(path.join(SCREENSHOT_DIR, `${name}.png`), png);
  const file = path.join(BASELINE_DIR, `${name}.png`);
  if (process.env.OPENWOP_UPDATE_SCREENSHOTS === '1') {
    fs.mkdirSync(BASELINE_DIR, { recursive: true });
    fs.writeFileSync(file, png);
    return;
  }
  if (!fs.existsSync(file)) throw new Error(`screenshot "${name}" has no baseline (${path.relative(process.cwd(), file)}): record it with OPENWOP_UPDATE_SCREENSHOTS=1, look at it, commit it`);
  const actual = PNG.sync.read(png);
  const expected = PNG.sync.read(fs.readFileSync(file));
  if (actual.width !== expected.width || actual.height !== expected.height) {
    throw new Error(`screenshot "${name}" is ${actual.width}×${actual.height} px, its baseline ${expected.width}×${expected.height} px (test/.tmp/console-screenshots/${name}.png)`);
  }
  const diff = new PNG({ width: actual.width, height: actual.height });
  const differing = pixelmatch(actual.data, expected.data, diff.data, actual.width, actual.height, { threshold: 0.1 });
  const share = differing / (actual.width * actual.height);
  if (share > TOLERANCE) {
    fs.writeFileSync(path.join(SCREENSHOT_DIR, `${name}.diff.png`), PNG.sync.write(diff));
    throw new Error(`screenshot "${name}" differs from its baseline in ${differing} pixels (${(share * 100).toFixed(2)} %, allowed ${TOLERANCE * 100} %): see test/.tmp/console-screenshots/${name}.diff.png`);
  }
}

/** axe-core in the page: no serious or critical violation. */
export async function expectAccessible(page: Page): Promise<void> {
  await page.evaluate(AXE_SOURCE);
  // Evaluated as source text: the test program is type-checked without the DOM library.
  const violations = (await page.evaluate(
    "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target) })))",
  )) as Array<{ id: string; impact: string; help: string; targets: unknown[] }>;
  expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);
}

/** The run id of the run page shown (`#/runs/<runId>`). */
export function runIdOf(page: Page): string {
  const m = /#\/runs\/([^/]+)$/.exec(page.url());
  if (!m) throw new Error(`not on a run's page: ${page.url()}`);
  return decodeURIComponent(m[1]);
}

/** Polls `read` until it answers `expected` (up to 15 s), for state the page reaches asynchronously. */
export async function eventually<T>(read: () => Promise<T>, expected: T, what: string): Promise<void> {
  const until = Date.now() + 15_000;
  let last: T | undefined;
  for (;;) {
    last = await read();
    if (JSON.stringify(last) === JSON.stringify(expected)) return;
    if (Date.now() > until) throw new Error(`${what}: expected ${JSON.stringify(expected)}, last saw ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The drawn node of the workflow graph, its state attribute and its box's computed fill colour. */
export function dagNode(page: Page, nodeId: string): { node: Locator; status: () => Promise<string | null>; fill: () => Promise<string> } {
  const node = page.locator(`.dag svg g.dag-node[data-node-id="${nodeId}"]`);
  return {
    node,
    status: () => node.getAttribute('data-status'),
    // Through the element's own window: the test program is type-checked without the DOM library.
    fill: () => node.locator('rect').evaluate((r) => r.ownerDocument.defaultView.getComputedStyle(r).fill as string),
  };
}
