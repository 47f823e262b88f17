import * as fs from 'node:fs';

export default async function globalTeardown(): Promise<void> {
  const e = (globalThis as { __openwopEmbedded?: { close(): Promise<void>; dir: string } }).__openwopEmbedded;
  if (!e) return;
  await e.close();
  fs.rmSync(e.dir, { recursive: true, force: true });
}
