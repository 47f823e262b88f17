'use strict';
// In this repository the SDK runs from its TypeScript sources when a TypeScript loader is active (the
// host under bin/openwop-host.js, compiled on the fly like the host); otherwise from compiled code: the
// package's own dist/ (built by `prepack`, the only thing the published package ships), else the copy
// the host's own build compiled beside the host that runs (its entry <outDir>/src/main.js, the SDK
// <outDir>/plugins/sdk/src: any outDir, `nest start` with another tsconfig included), else the one in the
// default build folder (`npm run build` / `nest build`: dist/plugins/sdk/src).
const fs = require('node:fs');
const path = require('node:path');
const source = path.join(__dirname, 'src', 'index.ts');
const candidates = [
  require.extensions['.ts'] ? source : undefined,
  path.join(__dirname, 'dist', 'index.js'),
  require.main && /\.js$/.test(require.main.filename) ? path.join(path.dirname(require.main.filename), '..', 'plugins', 'sdk', 'src', 'index.js') : undefined,
  path.join(__dirname, '..', '..', 'dist', 'plugins', 'sdk', 'src', 'index.js'),
  source,
].filter((f) => f && fs.existsSync(f));
module.exports = require(candidates[0] || source);
