import { checkWebhookUrl, isDeniedAddress, resolveWebhookTarget } from '../../platform/http/egress-guard';
import { retryDelayMs } from './webhooks.settings';

describe('webhook egress guard', () => {
  it.each([
    '127.0.0.1', '127.255.0.9', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '0.0.0.0', '100.64.0.1',
    '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:7f00:1',
    '::ffff:a9fe:a9fe', '64:ff9b::a00:1', '2002:c0a8:101::1', 'fe80::1%eth0',
  ])('denies %s', (ip) => expect(isDeniedAddress(ip)).toBe(true));

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:2800:220:1:248:1893:25c8:1946', '::ffff:8.8.8.8'])('allows %s', (ip) =>
    expect(isDeniedAddress(ip)).toBe(false),
  );

  it.each([
    ['http://example.com/hook', /https/],
    ['https://127.0.0.1/hook', /127\.0\.0\.1/],
    ['https://[::1]:8443/', /::1/],
    ['https://[::ffff:169.254.169.254]/', /private/],
    ['https://localhost/x', /local/],
    ['https://api.localhost/x', /local/],
    ['https://metadata.google.internal/computeMetadata/v1/', /metadata/],
    ['https://METADATA/', /metadata/],
    ['https://user:pw@example.com/', /credentials/],
    ['ftp://example.com/', /https/],
    ['not a url', /absolute URL/],
    ['https://2130706433/', /127\.0\.0\.1/],
  ])('refuses %s', (url, reason) => {
    const r = checkWebhookUrl(url, { allowPrivate: false });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(reason);
  });

  it('accepts public https URLs, and http/private ones only when allowed', () => {
    expect(checkWebhookUrl('https://example.com/hook', { allowPrivate: false }).ok).toBe(true);
    expect(checkWebhookUrl('http://127.0.0.1:9/hook', { allowPrivate: true }).ok).toBe(true);
    expect(checkWebhookUrl('ftp://127.0.0.1/', { allowPrivate: true }).ok).toBe(false);
  });

  it('validates every resolved address and pins the first one (DNS rebinding)', async () => {
    const url = new URL('https://rebind.example/hook');
    const mixed = await resolveWebhookTarget(url, { allowPrivate: false, resolver: async () => [{ address: '93.184.216.34', family: 4 }, { address: '10.0.0.5', family: 4 }] });
    expect(mixed).toMatchObject({ ok: false, reason: expect.stringMatching(/10\.0\.0\.5/) });
    const pub = await resolveWebhookTarget(url, { allowPrivate: false, resolver: async () => [{ address: '93.184.216.34', family: 4 }] });
    expect(pub).toEqual({ ok: true, address: '93.184.216.34', family: 4 });
    const none = await resolveWebhookTarget(url, { allowPrivate: false, resolver: async () => Promise.reject(Object.assign(new Error('nx'), { code: 'ENOTFOUND' })) });
    expect(none).toMatchObject({ ok: false, unresolved: true });
  });

  it('backs off exponentially up to the cap', () => {
    const s = { retryBaseMs: 1000, retryMaxMs: 5000 };
    expect([1, 2, 3, 4, 5].map((a) => retryDelayMs(s, a))).toEqual([1000, 2000, 4000, 5000, 5000]);
  });
});
