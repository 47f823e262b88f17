#!/usr/bin/env node
'use strict';
// npm run bench -- <name>: runs bench/<name>.ts (see bench/ for the list).
const fs = require('node:fs');
const path = require('node:path');
const root = path.join(__dirname, '..');
const name = process.argv[2];
const available = fs.readdirSync(path.join(root, 'bench')).filter((f) => f.endsWith('.ts') && f !== 'harness.ts').map((f) => f.replace(/\.ts$/, ''));
if (!name || !available.includes(name)) {
  console.error(`usage: npm run bench -- <${available.join('|')}>`);
  process.exit(2);
}
process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || path.join(root, 'tsconfig.json');
process.env.NODE_ENV = process.env.NODE_ENV || 'production';
require('@swc-node/register');
require(path.join(root, 'bench', `${name}.ts`));
