import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Browser, chromium } from 'playwright-core';

/** Debian's `chromium` package (CI installs it when missing); override with OPENWOP_TEST_CHROMIUM. */
export const CHROMIUM = process.env.OPENWOP_TEST_CHROMIUM ?? '/usr/bin/chromium';

export const SCREENSHOT_DIR = path.join(__dirname, '..', '.tmp', 'console-screenshots');

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
  '--remote-debugging-address=127.0.0.1',
  '--remote-debugging-port=0',
];

export interface RunningBrowser {
  browser: Browser;
  close(): Promise<void>;
}

/** Builds the console when its sources changed since the last build (a no-op otherwise). */
export function buildConsole(): void {
  const r = spawnSync(process.execPath, [path.join(__dirname, '..', '..', 'bin', 'build-console.js'), '--if-stale'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`the console build failed:\n${r.stdout}\n${r.stderr}`);
}

/**
 * Starts the system Chromium headless with a fresh profile and attaches playwright-core to it over the
 * DevTools protocol (no browser is ever downloaded). A missing Chromium fails the suite loudly.
 */
export async function launchChromium(): Promise<RunningBrowser> {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is required for the console browser tests and was not found at ${CHROMIUM}. ` +
        'Install Debian\'s package (apt-get install -y chromium; .ci/run does this) or set OPENWOP_TEST_CHROMIUM.',
    );
  }
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-chromium-'));
  const child: ChildProcess = spawn(CHROMIUM, [...FLAGS, `--user-data-dir=${profile}`, 'about:blank'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  const ws = await new Promise<string>((resolve, reject) => {
    let err = '';
    const timer = setTimeout(() => reject(new Error(`Chromium did not open its DevTools endpoint within 30 s:\n${err}`)), 30_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`Chromium exited (${code}) before it was ready:\n${err}`));
    });
  });
  const browser = await chromium.connectOverCDP(ws);
  const exited = new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve())));
  const signal = (sig: NodeJS.Signals) => {
    try {
      // The whole process group this suite started (Chromium's renderer and utility processes).
      if (child.pid) process.kill(-child.pid, sig);
    } catch {
      /* already gone */
    }
  };
  return {
    browser,
    async close() {
      await browser.close().catch(() => undefined);
      signal('SIGTERM');
      const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 5000).unref());
      if ((await Promise.race([exited, timer])) === 'timeout') {
        signal('SIGKILL');
        await exited;
      }
      child.stderr?.destroy();
      fs.rmSync(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    },
  };
}
