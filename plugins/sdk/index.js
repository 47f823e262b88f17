'use strict';
// In this repository the SDK runs from its TypeScript sources when a TypeScript loader is active (the
// host under bin/openwop-host.js, compiled on the fly like the host); otherwise from compiled code: the
// package's own dist/ (built by `prepack`, the only thing the published package ships), else the copy
// the host's own build compiled (`npm run build` / `nest build`: dist/plugins/sdk/src).
const fs = require('node:fs');
const path = require('node:path');
const source = path.join(__dirname, 'src', 'index.ts');
const candidates = [
  require.extensions['.ts'] ? source : undefined,
  path.join(__dirname, 'dist', 'index.js'),
  path.join(__dirname, '..', '..', 'dist', 'plugins', 'sdk', 'src', 'index.js'),
  source,
].filter((f) => f && fs.existsSync(f));
module.exports = require(candidates[0] || source);
