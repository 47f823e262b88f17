import { createHmac } from 'node:crypto';
import { messageId, MESSAGE_ID, mintWhsec, signStandard, signV1, standardHeaders, verifyV1, whsecKey } from './webhook-signing';
import { appliedAlgorithms, storedEventTypes } from './webhook-v2';

describe('webhook signing', () => {
  it('signs Standard Webhooks entries as the reference library does (its published test vector)', () => {
    const key = whsecKey('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')!;
    expect(signStandard(key, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}')).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('lists one entry per key, current first, in one space-separated header', () => {
    const [a, b] = [whsecKey(mintWhsec())!, whsecKey(mintWhsec())!];
    const h = standardHeaders([a, b], 'msg_0123456789abcdef', 1700000000, '{}');
    expect(h['webhook-signature'].split(' ')).toEqual([signStandard(a, 'msg_0123456789abcdef', 1700000000, '{}'), signStandard(b, 'msg_0123456789abcdef', 1700000000, '{}')]);
    expect(h['webhook-timestamp']).toBe('1700000000');
  });

  it.each([
    ['no prefix', 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
    ['8 bytes', `whsec_${Buffer.alloc(8, 1).toString('base64')}`],
    ['65 bytes', `whsec_${Buffer.alloc(65, 1).toString('base64')}`],
    ['not base64', 'whsec_not*base64*at*all*but*long*enough'],
  ])('refuses a secret that is not whsec_ of 24-64 bytes: %s', (_l, s) => expect(whsecKey(s)).toBeUndefined());

  it('mints whsec_ secrets of 32 bytes and message ids in the webhook-id grammar', () => {
    expect(whsecKey(mintWhsec())).toHaveLength(32);
    const id = messageId('0b6f3d9e-1c2a-4f5b-9a8e-7d6c5b4a3f21');
    expect(id).toMatch(MESSAGE_ID);
    expect(id).not.toContain('.');
    expect(messageId('0b6f3d9e-1c2a-4f5b-9a8e-7d6c5b4a3f21')).toBe(id);
  });

  it('verifies v1 deliveries with either header family, and refuses what a subscriber must refuse', () => {
    const now = 1_700_000_000;
    const body = '{"runId":"r"}';
    const sig = signV1('s3cret', now, body);
    expect(sig).toBe(`sha256=${createHmac('sha256', 's3cret').update(`${now}.${body}`).digest('hex')}`);
    const x = { 'X-openwop-Timestamp': String(now), 'X-openwop-Signature': sig, 'X-openwop-Signature-Algorithm': 'v1' };
    expect(verifyV1('s3cret', x, body, now)).toEqual({ accepted: true });
    expect(verifyV1('s3cret', { 'openwop-timestamp': String(now), 'openwop-signature': sig }, body, now)).toEqual({ accepted: true });
    expect(verifyV1('other', x, body, now)).toEqual({ accepted: false, reason: 'signature_mismatch' });
    expect(verifyV1('s3cret', x, `${body} `, now)).toEqual({ accepted: false, reason: 'signature_mismatch' });
    expect(verifyV1('s3cret', x, body, now + 301)).toEqual({ accepted: false, reason: 'timestamp_out_of_tolerance' });
    expect(verifyV1('s3cret', { ...x, 'X-openwop-Signature-Algorithm': 'standard-webhooks-1' }, body, now)).toEqual({ accepted: false, reason: 'unknown_signature_algorithm' });
    expect(verifyV1('s3cret', { ...x, 'X-openwop-Signature': sig.slice(7) }, body, now)).toEqual({ accepted: false, reason: 'malformed_signature' });
    expect(verifyV1('s3cret', { 'X-openwop-Signature': sig }, body, now)).toEqual({ accepted: false, reason: 'missing_headers' });
  });

  it('applies a major-2 opt-in only as listed, with v1, once each, with a whsec_ secret', () => {
    const s = mintWhsec();
    expect(appliedAlgorithms(undefined, undefined)).toEqual(['v1']);
    expect(appliedAlgorithms(['standard-webhooks-1', 'v1'], s)).toEqual(['v1', 'standard-webhooks-1']);
    for (const [list, secret] of [[['standard-webhooks-1'], s], [['v1', 'v1'], s], [['v1', 'x'], s], [['v1', 'standard-webhooks-1'], undefined], [['v1', 'standard-webhooks-1'], 'plain-secret-of-length']] as const) {
      expect(() => appliedAlgorithms([...list], secret)).toThrow(expect.objectContaining({ code: 'validation_error' }));
    }
  });

  it('matches a v2 event filter in the stored vocabulary', () => {
    expect(storedEventTypes(['run.completed', 'agent.tool-called', 'vendor.acme.thing'])).toEqual(['run.completed', 'agent.toolCalled', 'vendor.acme.thing']);
  });
});
