/** A host process for the replica tests: boots on DATABASE_URL, listens on an ephemeral port, reports it over IPC. */
import 'reflect-metadata';
import { Writable } from 'node:stream';
import { createHost } from '../../src/bootstrap';
import { loadHostConfig } from '../../src/platform/config/host-config';

async function main(): Promise<void> {
  const host = await createHost(loadHostConfig(process.env), { logDestination: new Writable({ write: (_c, _e, cb) => cb() }), openApi: false });
  await host.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = host.app.getHttpServer().address();
  process.send!({ port: typeof addr === 'object' && addr ? addr.port : 0 });
  host.exitOnStop();
  process.on('disconnect', () => void host.close().finally(() => process.exit(0)));
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
