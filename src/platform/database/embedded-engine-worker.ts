/**
 * The embedded engine's thread (see embedded-engine.ts): PGlite on a worker thread of the host
 * process, answering the protocol bytes the main thread sends. It loads nothing of the host: PGlite
 * and Node's worker_threads alone, so it starts at once and its start runs beside the main thread's.
 *
 * Messages in: `exec` (an id and the bytes of a message group), `close`. Out: `ready` or `failed`
 * once, then per exec `data` (a part of a long answer) and `done` (the rest, and whether the backend
 * is inside a transaction) or `error`; `closed` after `close`.
 */
import { parentPort } from 'node:worker_threads';
import type { PGlite } from '@electric-sql/pglite';
import { compilePglite, EngineReply, EngineRequest, openPglite } from './embedded-engine';

/** An answer is sent in parts of about this size, so a long one streams instead of piling up here. */
const PART_BYTES = 256 * 1024;

const port = parentPort!;
const send = (m: EngineReply, transfer?: ArrayBuffer[]) => port.postMessage(m, transfer ?? []);

// Compiled, and PGlite loaded, before the host owns the folder: `open` then only starts the backend.
const compiled = compilePglite();
compiled.catch(() => undefined);
require('@electric-sql/pglite');

let opened: Promise<PGlite> | undefined;

port.on('message', (m: EngineRequest) => {
  if (m.op === 'open') {
    opened = compiled.then((module) => openPglite(m.start, module));
    opened.then(
      () => send({ op: 'ready' }),
      (e: unknown) => send({ op: 'failed', message: (e as Error)?.message ?? String(e) }),
    );
  } else if (m.op === 'exec') void exec(m.id, m.bytes);
  else if (m.op === 'close') void close();
});

async function exec(id: number, bytes: Uint8Array): Promise<void> {
  let parts: Uint8Array[] = [];
  let size = 0;
  const flush = (): Uint8Array | undefined => {
    if (!parts.length) return undefined;
    const out = new Uint8Array(size);
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    parts = [];
    size = 0;
    return out;
  };
  try {
    const db = await opened!;
    await db.runExclusive(() =>
      db.execProtocolRawStream(bytes, {
        onRawData: (chunk: Uint8Array) => {
          // A view of the engine's memory: copied before the engine writes there again.
          parts.push(chunk.slice());
          size += chunk.length;
          if (size >= PART_BYTES) {
            const part = flush()!;
            send({ op: 'data', id, chunk: part }, [part.buffer as ArrayBuffer]);
          }
        },
      }),
    );
    const rest = flush();
    send({ op: 'done', id, chunk: rest, inTransaction: db.isInTransaction() }, rest ? [rest.buffer as ArrayBuffer] : []);
  } catch (e) {
    send({ op: 'error', id, message: (e as Error)?.message ?? String(e) });
  }
}

async function close(): Promise<void> {
  try {
    await (await opened)?.close();
  } catch {
    /* a start that failed has nothing to close */
  }
  send({ op: 'closed' });
}
