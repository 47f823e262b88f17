#!/usr/bin/env node
'use strict';
// npm run bench -- <name> [args...]: runs bench/<name>.ts (compiled on the fly) with its own arguments.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const root = path.join(__dirname, '..');
const [name, ...args] = process.argv.slice(2);
const available = fs.readdirSync(path.join(root, 'bench')).filter((f) => f.endsWith('.ts') && f !== 'harness.ts').map((f) => f.replace(/\.ts$/, ''));
if (!name || !available.includes(name)) {
  console.error(`usage: npm run bench -- <${available.join('|')}> [args...]`);
  process.exit(2);
}
const env = { ...process.env, SWC_NODE_PROJECT: process.env.SWC_NODE_PROJECT || path.join(root, 'tsconfig.json') };
const r = spawnSync(process.execPath, ['-r', '@swc-node/register', path.join(root, 'bench', `${name}.ts`), ...args], { stdio: 'inherit', env, cwd: root });
process.exit(r.status ?? 1);
