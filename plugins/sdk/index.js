'use strict';
// In this repository the SDK runs from its TypeScript sources (compiled on the fly like the host);
// the published package ships only the compiled dist/ (built by `prepack`).
const fs = require('node:fs');
const path = require('node:path');
const source = path.join(__dirname, 'src', 'index.ts');
module.exports = fs.existsSync(source) ? require(source) : require('./dist/index.js');
