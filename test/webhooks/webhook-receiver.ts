import { createHmac, timingSafeEqual } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedDelivery {
  path: string;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** A local webhook receiver: records every request; answers the queued statuses in turn, then `fallback`. */
export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = [];
  readonly statuses: number[] = [];
  fallback = 200;
  private server?: http.Server;
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const rawBody = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = JSON.parse(rawBody);
        } catch {
          body = undefined;
        }
        this.received.push({ path: req.url ?? '', headers: req.headers, rawBody, body });
        res.statusCode = this.statuses.length ? this.statuses.shift()! : this.fallback;
        res.end('ok');
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  on(path: string): ReceivedDelivery[] {
    return this.received.filter((r) => r.path === path);
  }

  async waitFor(pred: () => boolean, timeoutMs = 15_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (!pred()) {
      if (Date.now() > until) throw new Error(`receiver: condition not met in ${timeoutMs} ms (received ${this.received.length})`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/** The subscriber's verification recipe of webhooks.md, verbatim in substance. */
export function verifySignature(rawBody: string, headers: http.IncomingHttpHeaders, secret: string, nowS = Date.now() / 1000): boolean {
  const ts = Number(headers['x-openwop-timestamp']);
  if (!Number.isInteger(ts) || Math.abs(nowS - ts) > 300) return false;
  const sig = String(headers['x-openwop-signature'] ?? '').replace(/^sha256=/, '');
  const expected = createHmac('sha256', secret).update(`${ts}.${rawBody}`).digest('hex');
  return expected.length === sig.length && timingSafeEqual(Buffer.from(expected, 'hex'), Buffer.from(sig, 'hex'));
}
