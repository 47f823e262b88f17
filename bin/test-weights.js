#!/usr/bin/env node
'use strict';
// node bin/test-weights.js: after a whole `npm test`, writes each grouped test file's measured seconds
// (test/.tmp/spec-durations/, written by the groups) to test/support/test-weights.json, which spreads the
// files over the groups (test/support/test-groups.ts). A file missing from it weighs its size.
const fs = require('node:fs');
const path = require('node:path');
const root = path.join(__dirname, '..');
const dir = path.join(root, 'test/.tmp/spec-durations');
const out = path.join(root, 'test/support/test-weights.json');
let files = [];
try {
  files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
} catch {
  // no grouped run yet
}
if (!files.length) {
  process.stderr.write('no durations in test/.tmp/spec-durations: run the whole suite (npm test) first\n');
  process.exit(1);
}
const weights = {};
for (const f of files) Object.assign(weights, JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')));
const sorted = Object.fromEntries(Object.keys(weights).sort().map((k) => [k, Math.round(weights[k] * 10) / 10]));
fs.writeFileSync(out, JSON.stringify(sorted, null, 1) + '\n');
process.stdout.write(`${Object.keys(sorted).length} files' seconds written to ${path.relative(root, out)}\n`);
