import * as path from 'node:path';

/**
 * The test runner's own settings (jest.config.js): how many Jest workers a server database gets.
 * The config is a function of the environment, called here with the variables it reads set and
 * restored after.
 */
type JestConfig = () => Promise<{ maxWorkers: number }>;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const config = require(path.join(__dirname, '../../jest.config.js')) as JestConfig;

const READ = ['OPENWOP_TEST_WORKERS', 'OPENWOP_TEST_DB_MODE', 'OPENWOP_TEST_GROUPS'] as const;

async function workersWith(env: Partial<Record<(typeof READ)[number], string>>): Promise<number> {
  const saved = Object.fromEntries(READ.map((k) => [k, process.env[k]]));
  try {
    for (const k of READ) delete process.env[k];
    Object.assign(process.env, env);
    return (await config()).maxWorkers;
  } finally {
    for (const k of READ) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  }
}

describe('jest.config.js: the worker count', () => {
  it('gives a server database two workers unless OPENWOP_TEST_WORKERS names another whole number', async () => {
    expect(await workersWith({ OPENWOP_TEST_DB_MODE: 'url' })).toBe(2);
    expect(await workersWith({ OPENWOP_TEST_DB_MODE: 'url', OPENWOP_TEST_WORKERS: '' })).toBe(2);
    expect(await workersWith({ OPENWOP_TEST_DB_MODE: 'url', OPENWOP_TEST_WORKERS: '3' })).toBe(3);
    expect(await workersWith({ OPENWOP_TEST_DB_MODE: 'url', OPENWOP_TEST_WORKERS: '1' })).toBe(1);
  });

  it.each(['0', 'x', '2.5', '-1', ' 2', '02'])('refuses OPENWOP_TEST_WORKERS=%j with a message naming it', async (value) => {
    await expect(workersWith({ OPENWOP_TEST_DB_MODE: 'url', OPENWOP_TEST_WORKERS: value })).rejects.toThrow(`OPENWOP_TEST_WORKERS must be a whole number of workers (1 or more), not "${value}"`);
  });

  it('runs the embedded engine one file at a time whatever OPENWOP_TEST_WORKERS says', async () => {
    expect(await workersWith({ OPENWOP_TEST_DB_MODE: 'embedded', OPENWOP_TEST_WORKERS: '4' })).toBe(1);
  });
});
