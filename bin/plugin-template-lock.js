#!/usr/bin/env node
'use strict';
/**
 * Writes plugins/template/package-lock.json from the host's own package-lock.json: the template's
 * toolchain (its devDependencies but the SDK: Nest, rxjs, reflect-metadata, TypeScript, @types/node)
 * at exactly the versions, integrity hashes and layout the host installs. A copy of the template then
 * installs with `npm install --offline` wherever the host's `npm ci` ran (every package is in npm's
 * cache), and an author gets the toolchain the host was tested with.
 *
 *   node bin/plugin-template-lock.js          write it
 *   node bin/plugin-template-lock.js --check  exit 1 when the committed file differs
 *
 * The SDK is not in it: an author installs it from its tarball or a registry (docs/plugins.md).
 */
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
const TEMPLATE = path.join(ROOT, 'plugins/template');
const SDK = '@openwop-host/plugin-sdk';

function templateLock() {
  const host = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
  const manifest = JSON.parse(fs.readFileSync(path.join(TEMPLATE, 'package.json'), 'utf8'));
  /** The host lock's entry Node would load for `name` required from the package at `from` ('' = the root). */
  const find = (from, name) => {
    let dir = from;
    for (;;) {
      const key = `${dir ? `${dir}/` : ''}node_modules/${name}`;
      if (host.packages[key]) return key;
      if (!dir) return undefined;
      const i = dir.lastIndexOf('/node_modules/');
      dir = i < 0 ? '' : dir.slice(0, i);
    }
  };
  const picked = {};
  const queue = Object.keys(manifest.devDependencies ?? {}).filter((n) => n !== SDK).map((n) => ['', n]);
  while (queue.length) {
    const [from, name] = queue.shift();
    const key = find(from, name);
    if (!key) throw new Error(`${name} (needed by ${from || 'the template'}) is not in the host's package-lock.json: add it to the host's devDependencies`);
    if (picked[key]) continue;
    const entry = host.packages[key];
    if (entry.link) throw new Error(`${name} is a workspace link in the host, not a registry package`);
    picked[key] = entry;
    const optionalPeers = entry.peerDependenciesMeta ?? {};
    const needs = [
      ...Object.keys(entry.dependencies ?? {}),
      ...Object.keys(entry.optionalDependencies ?? {}).filter((n) => find(key, n)),
      ...Object.keys(entry.peerDependencies ?? {}).filter((n) => !optionalPeers[n]?.optional),
    ];
    for (const n of needs) queue.push([key, n]);
  }
  // A subset of a valid tree closed under resolution, kept at the same paths, resolves as the host's does.
  const packages = {};
  for (const key of Object.keys(picked).sort()) {
    const { peer, devOptional, ...entry } = picked[key]; // eslint-disable-line no-unused-vars
    packages[key] = { ...entry, dev: true };
  }
  const own = Object.fromEntries(['name', 'version', 'license', 'devDependencies', 'engines', 'peerDependencies'].filter((k) => manifest[k] !== undefined).map((k) => [k, manifest[k]]));
  return `${JSON.stringify({ name: manifest.name, version: manifest.version, lockfileVersion: 3, requires: true, packages: { '': own, ...packages } }, null, 2)}\n`;
}

const file = path.join(TEMPLATE, 'package-lock.json');
const text = templateLock();
if (process.argv.includes('--check')) {
  const current = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  if (current !== text) {
    process.stderr.write('plugins/template/package-lock.json is not the host lock\'s subset: run `npm run plugin-template:lock`\n');
    process.exit(1);
  }
} else {
  fs.writeFileSync(file, text);
  process.stdout.write(`wrote ${path.relative(process.cwd(), file)} (${Object.keys(JSON.parse(text).packages).length - 1} packages)\n`);
}
module.exports = { templateLock };
