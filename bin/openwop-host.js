#!/usr/bin/env node
'use strict';
// Runs the TypeScript sources directly (compiled on the fly by SWC, see ts-register.js), or the
// compiled build when OPENWOP_USE_DIST=true and `npm run build` has produced dist/.
const path = require('node:path');
const root = path.join(__dirname, '..');
if (process.env.OPENWOP_USE_DIST === 'true') {
  require(path.join(root, 'dist/src/cli.js')).main(process.argv);
} else {
  require('./ts-register');
  require(path.join(root, 'src/cli.ts')).main(process.argv);
}
