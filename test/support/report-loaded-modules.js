/* eslint-disable */
// Preloaded (`node --require`) by tests that check what a process loads: at exit, writes the
// resolved paths of the loaded modules whose path contains OPENWOP_TEST_MODULES_MATCH to the file
// named by OPENWOP_TEST_MODULES_REPORT (one a line).
'use strict';
const fs = require('node:fs');
const file = process.env.OPENWOP_TEST_MODULES_REPORT;
const match = process.env.OPENWOP_TEST_MODULES_MATCH || '';
if (file) {
  process.on('exit', () => {
    const loaded = Object.keys(require.cache).filter((k) => k.includes(match));
    fs.writeFileSync(file, loaded.join('\n'));
  });
}
