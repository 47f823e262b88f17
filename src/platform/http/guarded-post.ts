import * as http from 'node:http';
import * as https from 'node:https';
import type { LookupFunction } from 'node:net';
import { checkWebhookUrl, PortRange, Resolver, resolveWebhookTarget } from './egress-guard';

export type GuardedPostOutcome = { ok: true; status: number; body?: string } | { ok: false; status?: number; error: string };

export interface GuardedPostOptions {
  /** Accept http:// and private, loopback and link-local targets (local receivers, tests). */
  allowPrivate: boolean;
  /** The ports the target may use (default: 443 only). */
  allowedPorts?: readonly PortRange[];
  /** Deadline of the whole attempt (connect and response). */
  timeoutMs: number;
  /** Resolves names instead of DNS (tests). */
  resolver?: Resolver;
  /** Keep up to this many bytes of a 2xx answer's body (`body` of the outcome); by default the body is dropped. */
  maxResponseBytes?: number;
}

/**
 * One POST of the host's own outbound deliveries (webhooks, the audit checkpoint export): the URL
 * re-validated by the SSRF guard, its host resolved once and every address checked, the connection
 * made to the address that was checked (no second lookup can answer differently), no redirect
 * followed, one deadline. The receiver's body is read and dropped, unless the caller asks to keep a bounded prefix.
 */
export async function guardedPost(rawUrl: string, headers: Record<string, string>, body: string, opts: GuardedPostOptions): Promise<GuardedPostOutcome> {
  const { allowPrivate, allowedPorts } = opts;
  const checked = checkWebhookUrl(rawUrl, { allowPrivate, allowedPorts });
  if (!checked.ok) return { ok: false, error: `target refused: ${checked.reason}` };
  const target = await resolveWebhookTarget(checked.url, { allowPrivate, resolver: opts.resolver });
  if (!target.ok) return { ok: false, error: `target refused: ${target.reason}` };
  const url = checked.url;
  const pinned: LookupFunction = (_host, o, cb) => {
    if ((o as { all?: boolean }).all) (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address: target.address, family: target.family }]);
    else cb(null, target.address, target.family);
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<GuardedPostOutcome>((resolve) => {
    let done = false;
    const settle = (o: GuardedPostOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      resolve(o);
    };
    const req = client.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: pinned,
        agent: false,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const keep = opts.maxResponseBytes ?? 0;
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on('data', (c: Buffer) => {
          if (kept >= keep) return;
          chunks.push(c.subarray(0, keep - kept));
          kept += Math.min(c.length, keep - kept);
        });
        res.on('end', () =>
          settle(
            status >= 200 && status < 300
              ? { ok: true, status, ...(keep > 0 ? { body: Buffer.concat(chunks).toString('utf8') } : {}) }
              : { ok: false, status, error: status >= 300 && status < 400 ? `redirect ${status} not followed` : `receiver answered ${status}` },
          ),
        );
        res.on('error', (e) => settle({ ok: false, status, error: e.message }));
      },
    );
    const deadline = setTimeout(() => {
      settle({ ok: false, error: `no answer within ${opts.timeoutMs} ms` });
      req.destroy();
    }, opts.timeoutMs);
    req.on('error', (e) => settle({ ok: false, error: (e as NodeJS.ErrnoException).code ?? e.message }));
    req.end(body);
  });
}
