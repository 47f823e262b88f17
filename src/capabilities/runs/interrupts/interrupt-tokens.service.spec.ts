import type { HostConfig } from '../../../platform/config/host-config';
import type { HostSecretStore } from '../../../platform/secrets/host-secret.store';
import { InterruptTokenService } from './interrupt-tokens.service';

/** A token service over a fixed secret (the configuration's), no database. */
const service = (secret: string) => new InterruptTokenService({} as HostSecretStore, { interruptTokenSecret: secret } as HostConfig);
const payload = { runId: 'r-1', nodeId: 'wait', interruptId: 'i-1', expiresAt: '2999-01-01T00:00:00.000Z', intent: 'resolve' as const };

describe('interrupt tokens: the v1 scheme and ow2 (identity.md §4)', () => {
  it('signs major 2 as ow2.hs256.<kid>.<payload>.<mac> and verifies both schemes with one secret', async () => {
    const s = service('a-secret-of-enough-length');
    const v1 = await s.sign(payload);
    const v2 = await s.sign(payload, 2);
    expect(v1).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(v2).toMatch(/^ow2\.hs256\.k[A-Za-z0-9_-]{12}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(v2.split('.')[3]).toBe(v1.split('.')[0]); // the same payload
    for (const t of [v1, v2]) expect(await s.verify(t)).toEqual({ ok: true, payload: { v: 1, ...payload } });
    // The kid names the secret: the same secret elsewhere mints the same kid.
    expect((await service('a-secret-of-enough-length').sign(payload, 2)).split('.')[2]).toBe(v2.split('.')[2]);
  });

  it('an ow2 token under another alg, an unheld kid, a changed part or another secret is unverifiable (401), never "invalid" (404)', async () => {
    const s = service('a-secret-of-enough-length');
    const [, alg, kid, body, mac] = (await s.sign(payload, 2)).split('.');
    const other = await service('another-secret-entirely').sign(payload, 2);
    const forgedBody = Buffer.from(JSON.stringify({ v: 1, ...payload, expiresAt: '3999-01-01T00:00:00.000Z' })).toString('base64url');
    for (const t of [`ow2.rs256.${kid}.${body}.${mac}`, `ow2.${alg}.nokid.${body}.${mac}`, `ow2.${alg}.${kid}.${forgedBody}.${mac}`, `ow2.${alg}.${kid}.${body}`, other]) {
      expect([t, (await s.verify(t)).ok, (await s.verify(t) as { reason?: string }).reason]).toEqual([t, false, 'unverifiable']);
    }
    // A v1-shaped token with a bad MAC stays "invalid" (404 at both majors, as before).
    expect(await s.verify(`${body}.${mac}`)).toEqual({ ok: false, reason: 'invalid' });
  });

  it('an expired ow2 token is expired (410), like a v1 one', async () => {
    const s = service('a-secret-of-enough-length');
    const t = await s.sign({ ...payload, expiresAt: '2000-01-01T00:00:00.000Z' }, 2);
    expect(await s.verify(t)).toMatchObject({ ok: false, reason: 'expired' });
  });
});
