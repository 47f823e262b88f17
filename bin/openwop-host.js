#!/usr/bin/env node
'use strict';
// Runs the TypeScript sources directly (compiled on the fly by SWC), or the compiled build when
// OPENWOP_USE_DIST=true and `npm run build` has produced dist/.
const path = require('node:path');
const root = path.join(__dirname, '..');
if (process.env.OPENWOP_USE_DIST === 'true') {
  require(path.join(root, 'dist/src/cli.js')).main(process.argv);
} else {
  process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || path.join(root, 'tsconfig.json');
  require('@swc-node/register');
  require(path.join(root, 'src/cli.ts')).main(process.argv);
}
