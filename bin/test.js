#!/usr/bin/env node
'use strict';
// npm test [-- jest arguments]: the type checks (the host's and the console's) run beside the test suite
// instead of before it, so the two-core CI machine spends the type checks' half minute while the first
// test files wait on their databases. The run fails when either fails; the type checks' output is
// printed after the tests' (never interleaved with them).
const { spawn } = require('node:child_process');
const path = require('node:path');
const root = path.join(__dirname, '..');
const tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
const jest = require.resolve('jest/bin/jest', { paths: [root] });

function run(args, { capture }) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    let out = '';
    if (capture) {
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
    }
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), out }));
  });
}

async function typecheck() {
  for (const project of ['tsconfig.json', 'console/tsconfig.json']) {
    const r = await run([tsc, '-p', project, '--noEmit'], { capture: true });
    if (r.code !== 0) return { ...r, project };
  }
  return { code: 0, out: '' };
}

(async () => {
  // With no arguments the whole suite runs in groups of files (test/support/test-groups.ts).
  const args = process.argv.slice(2);
  if (!args.length) process.env.OPENWOP_TEST_GROUPS = '1';
  // A deprecation printed by any process of the run (a Jest worker, a host it started) says where it
  // was raised: pg's "client.query() when the client is already executing a query" outside the reach
  // of the test setup's guard (test/support/pg-overlap-guard.ts) is then found from the log alone.
  if (!/--trace-deprecation/.test(process.env.NODE_OPTIONS ?? '')) process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --trace-deprecation`.trim();
  const [types, tests] = await Promise.all([typecheck(), run([jest, ...args], { capture: false })]);
  if (types.code !== 0) process.stdout.write(`\ntype check of ${types.project} failed:\n${types.out}\n`);
  else process.stdout.write('type check: host and console clean\n');
  process.exit(types.code !== 0 ? types.code : tests.code);
})();
