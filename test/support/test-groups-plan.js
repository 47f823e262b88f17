/* eslint-disable */
'use strict';
// Which test files run in which group when the whole suite runs (test/support/test-groups.ts explains the
// groups); read by jest.config.js (the files that stay Jest files of their own) and by the groups themselves.
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '../..');
const SETTINGS = JSON.parse(fs.readFileSync(path.join(__dirname, 'test-groups.json'), 'utf8'));

/** The folders and name patterns of jest.config.js's per-file `testMatch` (kept in step with it). */
const SOURCES = [
  { dir: 'src', match: /\.spec\.ts$/ },
  { dir: 'console/src', match: /\.spec\.ts$/ },
  { dir: 'test', match: /\.e2e-spec\.ts$/ },
  { dir: 'plugins', match: /^plugins\/[^/]+\/(test|src)\/.*\.spec\.ts$/ },
];
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.tmp']);

function walk(dir, out) {
  for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    if (SKIPPED_DIRS.has(entry.name)) continue;
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) walk(rel, out);
    else out.push(rel);
  }
}

/** Every test file of the suite, relative to the project's root, sorted. */
function testFiles() {
  const out = [];
  for (const s of SOURCES) {
    const found = [];
    walk(s.dir, found);
    out.push(...found.filter((f) => s.match.test(f)));
  }
  return [...new Set(out)].sort();
}

/**
 * The files that keep a Jest file of their own, with why: those `test-groups.json` names, and any
 * whose tests need a registry of their own: snapshots (Jest names the snapshot file after the test
 * file) and fake timers.
 */
function isolatedFiles(files = testFiles()) {
  const out = { ...SETTINGS.isolated };
  for (const f of files) {
    if (out[f]) continue;
    const text = fs.readFileSync(path.join(ROOT, f), 'utf8');
    if (/toMatchSnapshot|toMatchInlineSnapshot|toThrowErrorMatchingSnapshot|toThrowErrorMatchingInlineSnapshot/.test(text)) out[f] = 'snapshots';
    else if (/useFakeTimers/.test(text)) out[f] = 'fake timers';
  }
  return out;
}

function weights() {
  try {
    return JSON.parse(fs.readFileSync(path.join(__dirname, 'test-weights.json'), 'utf8'));
  } catch {
    return {};
  }
}

/**
 * The grouped files as `groupCount` lists, deterministic for one set of files and weights: heaviest
 * first onto the lightest group. A file weighs its measured seconds (`test-weights.json`), else its
 * size (about a second per 3 KB of an e2e file).
 */
function groupPlan() {
  const all = testFiles();
  const isolated = isolatedFiles(all);
  const known = weights();
  const weight = (f) => known[f] ?? Math.max(1, fs.statSync(path.join(ROOT, f)).size / 3000);
  const sorted = all.filter((f) => !isolated[f]).map((f) => ({ f, w: weight(f) })).sort((a, b) => b.w - a.w || a.f.localeCompare(b.f));
  const groups = Array.from({ length: SETTINGS.groupCount }, () => ({ files: [], w: 0 }));
  for (const { f, w } of sorted) {
    let lightest = groups[0];
    for (const g of groups) if (g.w < lightest.w) lightest = g;
    lightest.files.push(f);
    lightest.w += w;
  }
  return groups.map((g) => g.files.sort());
}

module.exports = { ROOT, groupCount: SETTINGS.groupCount, testFiles, isolatedFiles, groupPlan };
