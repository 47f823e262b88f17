'use strict';
// Runs the TypeScript sources of a checkout: a require hook that compiles each `.ts` file on first
// load with SWC, using .swcrc (the options the tests compile with: decorators with metadata,
// CommonJS, ES2022). It neither type-checks nor loads the TypeScript compiler, so a command starts in
// a fraction of a second; `npm run typecheck` is where types are checked. Source maps are for a
// process that asks for them (`NODE_OPTIONS=--enable-source-maps`: each compiled file then carries an
// inline map and stack traces point at the TypeScript lines); reading and keeping the map of every
// file loaded, the dependencies' own included, cost a start about half a second of CPU and its memory.
//
// Compiled files are kept in node_modules/.cache/openwop-host/ts, named by a hash of the source, the
// options and the SWC version (a pure function of the three), so an unchanged file is never compiled
// twice and a command that needs only a few files does not even load SWC. The folder can be deleted
// at any time.
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

if (!require.extensions['.ts']) {
  const root = path.join(__dirname, '..');
  const options = JSON.parse(fs.readFileSync(path.join(root, '.swcrc'), 'utf8'));
  delete options.$schema;
  options.swcrc = false;
  options.configFile = false;
  // The inline map is two thirds of a compiled file's bytes: written only for a process that reads it.
  if (!process.sourceMapsEnabled) options.sourceMaps = false;
  const swcVersion = JSON.parse(fs.readFileSync(require.resolve('@swc/core/package.json', { paths: [root] }), 'utf8')).version;
  const salt = `${swcVersion}\0${JSON.stringify(options)}\0`;
  const cacheDir = path.join(root, 'node_modules', '.cache', 'openwop-host', 'ts');
  let swc;

  const compile = (source, filename) => {
    swc ??= require('@swc/core');
    return swc.transformSync(source, { ...options, filename }).code;
  };

  require.extensions['.ts'] = function compileTypeScript(module, filename) {
    const source = fs.readFileSync(filename, 'utf8');
    const hash = crypto.createHash('sha256').update(salt).update(filename).update('\0').update(source).digest('hex');
    const cached = path.join(cacheDir, `${hash}.js`);
    let code;
    try {
      code = fs.readFileSync(cached, 'utf8');
    } catch {
      code = compile(source, filename);
      try {
        // Written beside and renamed: a concurrent process reads the whole file or none.
        fs.mkdirSync(cacheDir, { recursive: true });
        const tmp = `${cached}.${process.pid}.tmp`;
        fs.writeFileSync(tmp, code);
        fs.renameSync(tmp, cached);
      } catch {
        // A read-only checkout runs uncached.
      }
    }
    module._compile(code, filename);
  };
}
