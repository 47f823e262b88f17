#!/usr/bin/env node
'use strict';
// Compiles a plugin package's src/**/*.ts (tests excluded) to CommonJS in dist/ with SWC, keeping
// decorator metadata: what `npm pack` of a plugin ships (run as its `prepack` script).
const fs = require('node:fs');
const path = require('node:path');
const swc = require('@swc/core');

const pkgDir = path.resolve(process.argv[2] || process.cwd());
const src = path.join(pkgDir, 'src');
const out = path.join(pkgDir, 'dist');
// Built beside dist/ and swapped in, so a process loading the package meanwhile (the host, another
// test) never reads a half-written dist/.
const tmp = `${out}.tmp-${process.pid}`;
const options = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '.swcrc'), 'utf8'));
delete options.$schema;
options.sourceMaps = false;
options.swcrc = false;

fs.rmSync(tmp, { recursive: true, force: true });
let count = 0;
(function walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(file);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') && !entry.name.endsWith('.d.ts')) {
      const { code } = swc.transformFileSync(file, { ...options, filename: file });
      const target = path.join(tmp, path.relative(src, file)).replace(/\.ts$/, '.js');
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, code);
      count++;
    }
  }
})(src);
fs.mkdirSync(tmp, { recursive: true });
const old = `${out}.old-${process.pid}`;
if (fs.existsSync(out)) fs.renameSync(out, old);
fs.renameSync(tmp, out);
fs.rmSync(old, { recursive: true, force: true });
console.error(`built ${count} file(s) into ${path.relative(process.cwd(), out) || out}`);
