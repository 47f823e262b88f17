/**
 * A host in a process of its own for tests that need one (the embedded engine cannot start inside a
 * Jest worker, and restart tests need a process to stop): boots from the environment like `serve`,
 * installs the chains of OPENWOP_TEST_CHAINS (a JSON file: {tenant, name, chains}), mints a key with
 * OPENWOP_TEST_KEY_SCOPES, listens on an ephemeral port and reports {port, key, socketDir} over IPC.
 * Logs go to stdout. It closes on IPC disconnect, and on SIGTERM, SIGINT, SIGHUP, SIGQUIT or a fatal
 * error as `serve` does.
 */
import 'reflect-metadata';
import * as fs from 'node:fs';
import { createHost } from '../../src/bootstrap';
import { loadHostConfig } from '../../src/platform/config/host-config';
import { ArtifactRegistryService } from '../../src/platform/artifacts/artifact-registry.service';
import { ApiKeyService } from '../../src/platform/identity/api-key.service';
import { chainPack } from '../runs/run-kit';

async function main(): Promise<void> {
  const host = await createHost(loadHostConfig(process.env), { openApi: false });
  // A test can make the run engine's lease handback slow to reach the database (as on a busy
  // machine), so that whatever closes the database before it is through shows.
  const slowRelease = Number(process.env.OPENWOP_TEST_SLOW_LEASE_RELEASE_MS ?? 0);
  if (slowRelease > 0) {
    const query = host.dataSource.query.bind(host.dataSource);
    host.dataSource.query = (async (sql: string, params?: unknown[], runner?: never) => {
      if (/^WITH h AS \(UPDATE "run" SET "lease_owner" = NULL/.test(sql)) await new Promise((r) => setTimeout(r, slowRelease));
      return query(sql, params, runner);
    }) as typeof host.dataSource.query;
  }
  const spec = process.env.OPENWOP_TEST_CHAINS ? (JSON.parse(fs.readFileSync(process.env.OPENWOP_TEST_CHAINS, 'utf8')) as { tenant: string; name: string; chains: Record<string, Record<string, unknown>> }) : undefined;
  if (spec) await host.app.get(ArtifactRegistryService).install('workflow-chain-pack', chainPack(spec.name, spec.chains), { tenant: spec.tenant, principal: 'tester' }, 'test');
  const scopes = (process.env.OPENWOP_TEST_KEY_SCOPES ?? 'runs:read').split(',');
  const { key } = await host.app.get(ApiKeyService).create({ tenant: spec?.tenant ?? 'default', principal: 'tester', scopes, roles: [] });
  await host.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = host.app.getHttpServer().address();
  process.send!({ port: typeof addr === 'object' && addr ? addr.port : 0, key, socketDir: host.db?.embedded?.socketDir });
  // Signals and fatal errors as `serve` has them; the parent going away closes it the same way.
  host.exitOnStop();
  process.on('disconnect', () => void host.close().finally(() => process.exit(0)));
  // A test asks for an uncaught exception (the fatal-error path of a stop).
  process.on('message', (m) => {
    if (m === 'throw-uncaught') {
      setImmediate(() => {
        throw new Error('an uncaught exception the test asked for');
      });
    }
  });
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
