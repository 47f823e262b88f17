import type { Transport } from '@modelcontextprotocol/client';

type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** A JSON-RPC response as it came on the wire: a `result` or an `error`. */
export interface McpWireResponse {
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

/** The JSON-RPC messages of an SSE body (`data:` lines of each event). */
function sseMessages(text: string): unknown[] {
  const out: unknown[] = [];
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''))
      .join('\n');
    if (!data) continue;
    try {
      out.push(JSON.parse(data));
    } catch {
      // not JSON: not a message the tap keeps
    }
  }
  return out;
}

/**
 * What the official MCP client sent and what the server answered, as JSON-RPC messages before the
 * client parses them (its parsed results drop `resultType` and fields its schemas do not know, e.g.
 * inside `_meta`). `ctx.mcp` answers the server's result unaltered, so it reads it here.
 *
 * Over Streamable HTTP the tap wraps the transport's `fetch` and reads a copy of each POST's body
 * (JSON or SSE) as the server sent it; over stdio, where there are no bytes to copy, it keeps each
 * message the transport delivers (already JSON-RPC-parsed by the transport, before the client reads
 * it). Requests are correlated by their JSON-RPC id, as the client sent them.
 */
export class McpWireTap {
  private readonly sent: Array<{ id: string | number; method: string }> = [];
  private readonly answers = new Map<string, McpWireResponse>();
  private readonly reading = new Set<Promise<void>>();

  /** Wraps the fetch the HTTP transport uses: every POST answer's body is read from a copy. */
  fetch(inner: Fetch): Fetch {
    return async (url, init) => {
      const res = await inner(url, init);
      if ((init?.method ?? 'GET').toUpperCase() === 'POST' && res.body) {
        const copy = res.clone();
        const type = res.headers.get('content-type') ?? '';
        const read = copy
          .text()
          .then((text) => {
            if (type.includes('text/event-stream')) for (const m of sseMessages(text)) this.keep(m);
            else {
              const parsed: unknown = JSON.parse(text);
              for (const m of Array.isArray(parsed) ? parsed : [parsed]) this.keep(m);
            }
          })
          .catch(() => undefined)
          .finally(() => this.reading.delete(read));
        this.reading.add(read);
      }
      return res;
    };
  }

  /** Watches a transport: the requests it sends and, unless `bytes` (HTTP: the fetch sees them), the messages it delivers. */
  watch<T extends Transport>(transport: T, opts: { deliveries: boolean }): T {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      const m = message as { id?: unknown; method?: unknown };
      if ((typeof m.id === 'string' || typeof m.id === 'number') && typeof m.method === 'string') this.sent.push({ id: m.id, method: m.method });
      return send(message, options);
    };
    if (opts.deliveries) {
      let handler: Transport['onmessage'];
      Object.defineProperty(transport, 'onmessage', {
        configurable: true,
        get: () => handler,
        set: (h: Transport['onmessage']) => {
          handler = h
            ? (message, extra) => {
                // A copy: the client may change what it was handed.
                this.keep(structuredClone(message));
                h(message, extra);
              }
            : h;
        },
      });
    }
    return transport;
  }

  /** The answer to the last request of `method` the client sent, once every copy in flight is read. */
  async last(method: string): Promise<McpWireResponse | undefined> {
    while (this.reading.size) await Promise.all([...this.reading]);
    for (let i = this.sent.length - 1; i >= 0; i--) {
      if (this.sent[i].method === method) return this.answers.get(JSON.stringify(this.sent[i].id));
    }
    return undefined;
  }

  private keep(m: unknown): void {
    if (!isObject(m) || 'method' in m) return;
    const id = m.id;
    if (typeof id !== 'string' && typeof id !== 'number') return;
    if (isObject(m.result)) this.answers.set(JSON.stringify(id), { result: m.result });
    else if (isObject(m.error) && typeof m.error.code === 'number') {
      const e = m.error as { code: number; message?: unknown; data?: unknown };
      this.answers.set(JSON.stringify(id), { error: { ...e, code: e.code, message: typeof e.message === 'string' ? e.message : '' } });
    }
  }
}
