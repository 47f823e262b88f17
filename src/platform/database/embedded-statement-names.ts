import { message, QUERY } from './wire-protocol';

const PARSE = 0x50; // 'P'
const BIND = 0x42; // 'B'
const DESCRIBE = 0x44; // 'D'
const CLOSE = 0x43; // 'C'
const SYNC = 0x53; // 'S'
const STATEMENT = 0x53; // 'S' (Describe/Close of a statement, not a portal)

/** PostgreSQL keeps prepared statement names to NAMEDATALEN - 1 bytes: longer ones would be cut and could collide. */
const MAX_NAME_BYTES = 63;

/** A simple query that deallocates one named statement, or all of them (`DEALLOCATE [PREPARE] name | ALL`). */
const DEALLOCATE = /^\s*deallocate\s+(?:prepare\s+)?(?:(all)|"((?:[^"]|"")+)"|([a-z_][a-z0-9_$]*))\s*;?\s*$/i;

/** What a batch becomes: bytes for the backend, or an answer to `DEALLOCATE ALL` the server gives itself. */
export type BatchStep = { exec: Buffer } | { deallocateAll: true };

/**
 * The named prepared statements of one connection of the embedded wire server. Every connection
 * shares the engine's one backend session, where the statement a client names `x` would be the
 * statement every other client names `x`: each connection's names are rewritten on their way to the
 * backend (its id as a prefix), so a connection prepares, binds, describes and closes its own
 * statements as it would on a server of its own, and two connections preparing the same name (every
 * host connection prepares the engine's statements under the same names) each get theirs. The
 * unnamed statement needs none: a message group runs with the backend to itself. What a connection
 * leaves prepared is closed when it goes away (`closeAll`).
 *
 * A simple query `DEALLOCATE name` is rewritten the same way (the host's driver sends it to prepare
 * a statement again), and `DEALLOCATE ALL` closes this connection's statements only. Errors of the
 * backend that name a statement show the backend's name (with the prefix).
 */
export class StatementNames {
  private readonly names = new Map<string, string>();
  private next = 1;

  constructor(private readonly prefix: string) {}

  /** The backend's name of a client's statement name ('' stays the unnamed statement). */
  backendName(name: string): string {
    if (name === '') return '';
    let mapped = this.names.get(name);
    if (mapped === undefined) {
      mapped = `${this.prefix}${name}`;
      if (Buffer.byteLength(mapped) > MAX_NAME_BYTES) mapped = `${this.prefix}#${this.next++}`;
      this.names.set(name, mapped);
    }
    return mapped;
  }

  /** The backend names this connection has used (prepared, or tried to). */
  used(): string[] {
    return [...this.names.values()];
  }

  /**
   * A batch of frontend messages with this connection's statement names: the same bytes when it names
   * none (the common case of unnamed statements costs one scan), else the batch rebuilt. A batch is
   * split around a `DEALLOCATE ALL` query, which the server answers itself (`deallocateAll`).
   */
  rewrite(batch: Buffer): BatchStep[] {
    let i = 0;
    let changed = false;
    let start = 0;
    const steps: BatchStep[] = [];
    let parts: Buffer[] = [];
    const flush = () => {
      if (parts.length) steps.push({ exec: parts.length === 1 ? parts[0] : Buffer.concat(parts) });
      parts = [];
    };
    while (i + 5 <= batch.length) {
      const type = batch[i];
      const end = i + 1 + batch.readInt32BE(i + 1);
      const out = this.rewriteMessage(type, batch.subarray(i + 5, end));
      if (out !== undefined) {
        changed = true;
        if (start < i) parts.push(batch.subarray(start, i));
        if (out === 'deallocate-all') {
          flush();
          steps.push({ deallocateAll: true });
        } else parts.push(out);
        start = end;
      }
      i = end;
    }
    if (!changed) return [{ exec: batch }];
    if (start < batch.length) parts.push(batch.subarray(start));
    flush();
    return steps;
  }

  /** Close messages for every statement of this connection, and a Sync (undefined when it has none). */
  closeMessages(names: string[] = this.used()): Buffer | undefined {
    if (!names.length) return undefined;
    return Buffer.concat([...names.map((n) => message(CLOSE, Buffer.concat([Buffer.from([STATEMENT]), cstr(n)]))), message(SYNC, Buffer.alloc(0))]);
  }

  /** Forgets every name (they were closed). */
  forgetAll(): void {
    this.names.clear();
  }

  private rewriteMessage(type: number, body: Buffer): Buffer | 'deallocate-all' | undefined {
    switch (type) {
      case PARSE: {
        const end = body.indexOf(0);
        if (end <= 0) return undefined;
        return message(PARSE, Buffer.concat([cstr(this.backendName(body.toString('utf8', 0, end))), body.subarray(end + 1)]));
      }
      case BIND: {
        const portalEnd = body.indexOf(0);
        const nameEnd = body.indexOf(0, portalEnd + 1);
        if (portalEnd < 0 || nameEnd <= portalEnd + 1) return undefined;
        const name = this.backendName(body.toString('utf8', portalEnd + 1, nameEnd));
        return message(BIND, Buffer.concat([body.subarray(0, portalEnd + 1), cstr(name), body.subarray(nameEnd + 1)]));
      }
      case DESCRIBE:
      case CLOSE: {
        if (body[0] !== STATEMENT || body.length < 3) return undefined;
        const end = body.indexOf(0, 1);
        if (end <= 1) return undefined;
        return message(type, Buffer.concat([Buffer.from([STATEMENT]), cstr(this.backendName(body.toString('utf8', 1, end))), body.subarray(end + 1)]));
      }
      case QUERY:
        return this.rewriteDeallocate(body);
      default:
        return undefined;
    }
  }

  private rewriteDeallocate(body: Buffer): Buffer | 'deallocate-all' | undefined {
    // Cheap test first: the statement's first letters (after blanks) spell DEALLOCATE.
    let j = 0;
    while (j < body.length && (body[j] === 0x20 || body[j] === 0x0a || body[j] === 0x09 || body[j] === 0x0d)) j++;
    if (body.length - j < 10 || body.toString('latin1', j, j + 10).toLowerCase() !== 'deallocate') return undefined;
    const m = DEALLOCATE.exec(body.toString('utf8', 0, Math.max(0, body.indexOf(0))));
    if (!m) return undefined;
    if (m[1]) return 'deallocate-all';
    const name = m[2] !== undefined ? m[2].replace(/""/g, '"') : m[3].toLowerCase();
    return message(QUERY, cstr(`DEALLOCATE "${this.backendName(name).replace(/"/g, '""')}"`));
  }
}

function cstr(s: string): Buffer {
  return Buffer.from(`${s}\0`, 'utf8');
}
