/* eslint-disable */
// The database the tests use is decided once here: DATABASE_URL, else the PostgreSQL server on
// 127.0.0.1:5432, else the embedded engine (one process, so test files then run one at a time).
const net = require('node:net');
const fs = require('node:fs');
const path = require('node:path');

function reachable(host, port) {
  return new Promise((resolve) => {
    const s = net.createConnection({ host, port });
    const done = (ok) => { s.destroy(); resolve(ok); };
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
    setTimeout(() => done(false), 1500);
  });
}

/**
 * Jest workers on a server database: 2 (the two-core CI machine, where a grouped run keeps both cores busy and a
 * third worker was no faster), or OPENWOP_TEST_WORKERS on a machine with more cores. The embedded engine is one
 * process: its files run one at a time.
 */
function serverWorkers() {
  const text = process.env.OPENWOP_TEST_WORKERS;
  if (text === undefined || text === '') return 2;
  if (!/^[1-9][0-9]*$/.test(text)) throw new Error(`OPENWOP_TEST_WORKERS must be a whole number of workers (1 or more), not "${text}"`);
  return Number(text);
}

module.exports = async () => {
  if (!process.env.OPENWOP_TEST_DB_MODE) {
    if (process.env.DATABASE_URL) process.env.OPENWOP_TEST_DB_MODE = 'url';
    else if (await reachable('127.0.0.1', 5432)) {
      process.env.OPENWOP_TEST_DB_MODE = 'url';
      process.env.DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
    } else process.env.OPENWOP_TEST_DB_MODE = 'embedded';
  }
  const groups = process.env.OPENWOP_TEST_GROUPS === '1';
  const swc = JSON.parse(fs.readFileSync(path.join(__dirname, '.swcrc'), 'utf8'));
  delete swc.$schema;
  return {
    rootDir: __dirname,
    testEnvironment: 'node',
    // The whole suite (`npm test` with no arguments) runs its files in groups, one module registry per group
    // instead of one per file (test/support/test-groups.ts); any other run takes the files one by one.
    testMatch: groups
      ? ['<rootDir>/test/groups/*.group.ts', ...Object.keys(require('./test/support/test-groups-plan.js').isolatedFiles()).map((f) => `<rootDir>/${f}`)]
      : ['<rootDir>/src/**/*.spec.ts', '<rootDir>/console/src/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts', '<rootDir>/plugins/*/test/**/*.spec.ts', '<rootDir>/plugins/*/src/**/*.spec.ts'],
    testPathIgnorePatterns: ['/node_modules/', '/dist/'],
    // Scratch folders tests write (a packed plugin template with its own copy of the SDK) are not modules of the project.
    modulePathIgnorePatterns: ['<rootDir>/test/.tmp/'],
    // A few dependencies ship ES modules only; SWC turns them into CommonJS for Jest on Node 20. The
    // OTLP exporters' base loads `http` with import(), which Jest's CommonJS runtime refuses.
    transformIgnorePatterns: ['/node_modules/(?!(content-disposition|jose|pkce-challenge|@apidevtools/json-schema-ref-parser|@opentelemetry/otlp-exporter-base)/)'],
    transform: { '^.+\\.(t|j)s$': ['@swc/jest', { ...swc, swcrc: false }] },
    moduleNameMapper: { '^@openwop-host/plugin-sdk$': '<rootDir>/plugins/sdk/src/index.ts' },
    testSequencer: '<rootDir>/test/support/test-sequencer.js',
    globalSetup: '<rootDir>/test/support/global-setup.ts',
    // A query sent on a pg client still executing another fails the file (pg 9 refuses it).
    setupFilesAfterEnv: ['<rootDir>/test/support/pg-overlap-guard.ts'],
    globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    testTimeout: 60000,
    maxWorkers: process.env.OPENWOP_TEST_DB_MODE === 'embedded' ? 1 : serverWorkers(),
    // How long a worker may take to exit once its files are done before Jest kills it (and says it leaked). A test
    // app's close ends its database connections without waiting for PostgreSQL to close them (pg-pool's end), and on
    // two busy cores their last sockets and the process's own exit took longer than Jest's 500 ms: a worker then held
    // nothing but those closing sockets. A handle that stays open is still killed, and reported, after this.
    workerGracefulExitTimeout: 3000,
    verbose: false,
    reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  };
};
