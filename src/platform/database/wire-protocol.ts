/**
 * The Postgres wire protocol (v3.0) as the embedded database's wire server reads and writes it: the
 * message codes it looks at, the messages it builds itself, and the scans of a batch of frontend
 * messages or of a backend answer. No state: the connections and their scheduling are the server's
 * (embedded-wire-server.ts, wire-connection.ts).
 */
export const SSL_REQUEST = 80877103;
export const GSSENC_REQUEST = 80877104;
export const CANCEL_REQUEST = 80877102;
export const PROTOCOL_3_0 = 196608;
export const TERMINATE = 0x58; // 'X'
export const SYNC = 0x53; // 'S'
export const QUERY = 0x51; // 'Q'
export const PARSE = 0x50; // 'P'
export const READY = 0x5a; // 'Z'
export const BACKEND_KEY = 0x4b; // 'K'

/** A backend message: its type byte, its length, its body. */
export function message(type: number, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head[0] = type;
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/** An ErrorResponse with severity, SQLSTATE and message. */
export function errorResponse(severity: 'ERROR' | 'FATAL', code: string, text: string): Buffer {
  const field = (t: string, v: string) => Buffer.concat([Buffer.from(t), Buffer.from(v, 'utf8'), Buffer.from([0])]);
  return message(0x45, Buffer.concat([field('S', severity), field('V', severity), field('C', code), field('M', text), Buffer.from([0])]));
}

/** A CommandComplete with its tag. */
export function commandComplete(tag: string): Buffer {
  return message(0x43, Buffer.from(`${tag}\0`, 'utf8'));
}

export function readyForQuery(status: 'I' | 'T' | 'E'): Buffer {
  return message(READY, Buffer.from(status));
}

/**
 * The ParameterStatus the wire server adds to every startup answer: it names the embedded engine to
 * a client (its connections share one backend session; the statement names of each are kept apart
 * by the server, embedded-statement-names.ts, so a client may prepare statements as on a server).
 */
export const EMBEDDED_PARAMETER = 'openwop.embedded';
export const EMBEDDED_STATUS = message(0x53, Buffer.from(`${EMBEDDED_PARAMETER}\0on\0`));

/** A startup answer with the wire server's ParameterStatus before its last ReadyForQuery. */
export function announceEmbedded(out: Buffer): Buffer {
  let last = -1;
  for (let i = 0; i + 5 <= out.length; i += 1 + out.readInt32BE(i + 1)) if (out[i] === READY) last = i;
  return last < 0 ? out : Buffer.concat([out.subarray(0, last), EMBEDDED_STATUS, out.subarray(last)]);
}

export const SYNC_MESSAGE = message(SYNC, Buffer.alloc(0));
export const ROLLBACK_MESSAGE = message(QUERY, Buffer.from('ROLLBACK\0'));

/** The SQL text of the first Query or Parse message of a batch, shortened, for diagnostics. */
export function statementOf(batch: Buffer): string | undefined {
  let i = 0;
  while (i + 5 <= batch.length) {
    const type = batch[i];
    const len = batch.readInt32BE(i + 1);
    const body = batch.subarray(i + 5, i + 1 + len);
    if (type === QUERY) return body.subarray(0, Math.max(0, body.indexOf(0))).toString('utf8').slice(0, 200);
    if (type === PARSE) {
      const nameEnd = body.indexOf(0);
      const sql = body.subarray(nameEnd + 1);
      return sql.subarray(0, Math.max(0, sql.indexOf(0))).toString('utf8').slice(0, 200);
    }
    i += 1 + len;
  }
  return undefined;
}

/** The transaction status of the last ReadyForQuery in a complete response, if any. */
export function lastReadyStatus(out: Uint8Array): string | undefined {
  let status: string | undefined;
  let i = 0;
  const b = Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  while (i + 5 <= b.length) {
    const len = b.readInt32BE(i + 1);
    if (b[i] === READY && i + 5 < b.length) status = String.fromCharCode(b[i + 5]);
    i += 1 + len;
  }
  return status;
}
