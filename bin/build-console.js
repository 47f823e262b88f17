#!/usr/bin/env node
'use strict';
// Builds the operator console (console/) into console/dist, which the host serves at /console.
// Run by `npm ci`/`npm install` (the root `prepare` script) and by `serve` (with --if-stale).
//   --if-stale  rebuild only when a source file, the OpenAPI document or the build tooling changed.
// Without the build tooling (an install with --omit=dev) it says so and exits 0: the host then serves a
// page telling how to build the console, and everything else works.
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const consoleDir = path.join(root, 'console');
const outDir = path.join(consoleDir, 'dist');
const stampFile = path.join(outDir, '.build-stamp');

function files(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? files(p) : [p];
  });
}

/** A hash over everything the bundle is made from, so a stale build is detected without timestamps. */
function sourceHash() {
  const inputs = [
    path.join(consoleDir, 'index.html'),
    ...files(path.join(consoleDir, 'src')).sort(),
    path.join(root, 'schemas', 'openapi.json'),
    path.join(root, 'package-lock.json'),
    __filename,
  ];
  const h = crypto.createHash('sha256');
  for (const f of inputs) h.update(path.relative(root, f)).update('\0').update(fs.readFileSync(f)).update('\0');
  return h.digest('hex');
}

/** Whether console/dist holds the build of the current sources. */
function isCurrent(hash) {
  return fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === hash && fs.existsSync(path.join(outDir, 'index.html'));
}

/**
 * What `--if-stale` checks, for `serve` to ask in its own process (a few milliseconds) before it
 * starts this script in another one, which only a stale build needs: true when the build is current
 * or there is nothing to build it from.
 */
function consoleCurrent() {
  return !fs.existsSync(path.join(consoleDir, 'src')) || isCurrent(sourceHash());
}

async function main() {
  const ifStale = process.argv.includes('--if-stale');
  // A deployment that ships only the built files has nothing to build from.
  if (!fs.existsSync(path.join(consoleDir, 'src'))) return;
  const hash = sourceHash();
  if (ifStale && isCurrent(hash)) return;
  let vite;
  try {
    vite = await import('vite');
  } catch {
    process.stderr.write('console: the build tooling (vite, preact) is not installed (dev dependencies omitted); /console will not be served.\n');
    return;
  }
  const started = Date.now();
  // Built beside the live folder and swapped in, so a host serving the console (or a second build
  // running at the same time, as two test workers may) never sees a half-written folder.
  const tmpDir = `${outDir}.tmp-${process.pid}`;
  await vite.build({
    configFile: false,
    root: consoleDir,
    base: '/console/',
    logLevel: 'warn',
    publicDir: false,
    oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
    build: {
      outDir: tmpDir,
      emptyOutDir: true,
      target: 'es2022',
      sourcemap: false,
      // Small enough to inline nothing: the host's Content-Security-Policy allows only same-origin files.
      assetsInlineLimit: 0,
      modulePreload: { polyfill: false },
    },
  });
  fs.writeFileSync(path.join(tmpDir, '.build-stamp'), hash);
  const oldDir = `${outDir}.old-${process.pid}`;
  if (fs.existsSync(outDir)) fs.renameSync(outDir, oldDir);
  try {
    fs.renameSync(tmpDir, outDir);
  } catch (e) {
    // Another build swapped its (identical) output in first.
    if (!fs.existsSync(path.join(outDir, 'index.html'))) throw e;
    fs.rmSync(tmpDir, { recursive: true, force: true });
  }
  fs.rmSync(oldDir, { recursive: true, force: true });
  process.stdout.write(`console: built into console/dist in ${Date.now() - started} ms\n`);
}

if (require.main === module) {
  main().catch((e) => {
    process.stderr.write(`console: build failed: ${e && e.stack ? e.stack : e}\n`);
    process.exit(1);
  });
}

module.exports = { consoleCurrent };
