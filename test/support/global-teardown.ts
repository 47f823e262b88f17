import * as fs from 'node:fs';

export default async function globalTeardown(): Promise<void> {
  const pool = (globalThis as { __openwopDatabasePool?: { stop(): Promise<void>; queue: string } }).__openwopDatabasePool;
  if (pool) {
    await pool.stop();
    fs.rmSync(pool.queue, { force: true });
  }
  const e = (globalThis as { __openwopEmbedded?: { close(): Promise<void>; dir: string } }).__openwopEmbedded;
  if (!e) return;
  await e.close();
  fs.rmSync(e.dir, { recursive: true, force: true });
}
