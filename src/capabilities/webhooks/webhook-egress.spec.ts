import { checkWebhookUrl, isDeniedAddress, resolveWebhookTarget } from '../../platform/http/egress-guard';
import { loadWebhookSettings } from '../../platform/config/webhook-settings';
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

  // IPv4 carried inside IPv6, in every form and spelling: each is checked as the IPv4 address it carries.
  it.each([
    ['IPv4-mapped, hex', '::ffff:7f00:1'],
    ['IPv4-mapped, uppercase and leading zeros', '0000:0000:0000:0000:0000:FFFF:7F00:0001'],
    ['IPv4-translated (RFC 6145), hex', '::ffff:0:7f00:1'],
    ['IPv4-translated, dotted', '::ffff:0:127.0.0.1'],
    ['IPv4-translated, metadata', '::ffff:0:a9fe:a9fe'],
    ['IPv4-compatible, dotted', '::127.0.0.1'],
    ['IPv4-compatible, hex', '::a00:1'],
    ['NAT64 well-known', '64:ff9b::7f00:1'],
    ['NAT64 well-known, dotted', '64:ff9b::10.0.0.1'],
    ['NAT64 local-use (RFC 8215)', '64:ff9b:1::7f00:1'],
    ['NAT64 local-use, uppercase and leading zeros', '0064:FF9B:0001:0000:0000:0000:7F00:0001'],
    ['6to4 of loopback', '2002:7f00:1::'],
    ['6to4 of metadata', '2002:a9fe:a9fe::1'],
    ['Teredo, client 127.0.0.1 (obfuscated)', '2001:0:4136:e378:8000:63bf:80ff:fffe'],
    ['Teredo, server 10.0.0.1', '2001:0:a00:1:8000:63bf:f7f7:f7f7'],
    ['ISATAP, global prefix', '2600::5efe:7f00:1'],
    ['ISATAP, universal bit set', '2600:1:2:3:200:5efe:a00:1'],
    ['mapped with a zone id', '::ffff:7f00:1%eth0'],
    ['translated with a numeric zone id', '::ffff:0:7f00:1%1'],
  ])('denies %s: %s', (_form, ip) => expect(isDeniedAddress(ip)).toBe(true));

  it.each([
    ['NAT64 well-known of 8.8.8.8', '64:ff9b::808:808'],
    ['NAT64 local-use of 8.8.8.8', '64:ff9b:1::808:808'],
    ['IPv4-translated of 8.8.8.8', '::ffff:0:808:808'],
    ['6to4 of 8.8.8.8', '2002:808:808::1'],
    ['Teredo, public server and client', '2001:0:4136:e378:8000:63bf:f7f7:f7f7'],
    ['ISATAP of 8.8.8.8', '2600::5efe:808:808'],
    ['global unicast', '2606:4700:4700::1111'],
  ])('allows %s: %s', (_form, ip) => expect(isDeniedAddress(ip)).toBe(false));

  it('refuses what is not an IP address at all', () => {
    for (const a of ['', 'example.com', '00001::1', '1.2.3', '::ffff:999.0.0.1']) expect(isDeniedAddress(a)).toBe(true);
  });

  it.each([
    'https://[::ffff:0:7f00:1]/',
    'https://[64:ff9b:1::7f00:1]/',
    'https://[::FFFF:127.0.0.1]/',
    'https://[0:0:0:0:0:ffff:7f00:0001]/',
    'https://[::127.0.0.1]/',
    'https://[2002:7f00:1::]/',
    'https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/',
    'https://[2600::5efe:a9fe:a9fe]/latest/meta-data/',
  ])('refuses the literal %s', (url) => {
    const r = checkWebhookUrl(url, { allowPrivate: false });
    expect(r).toMatchObject({ ok: false, reason: expect.stringMatching(/private, loopback/) });
  });

  it('refuses a name that resolves to IPv4 loopback inside an IPv6 prefix', async () => {
    for (const address of ['::ffff:0:7f00:1', '64:ff9b:1::7f00:1', '2001:0:4136:e378:8000:63bf:80ff:fffe']) {
      const r = await resolveWebhookTarget(new URL('https://inside.example/'), { allowPrivate: false, resolver: async () => [{ address, family: 6 }] });
      expect(r).toMatchObject({ ok: false, reason: expect.stringContaining(address) });
    }
  });

  it('accepts only the allowed ports: 443 by default, any port outside the list refused (registration and delivery alike)', () => {
    expect(checkWebhookUrl('https://example.com/hook', { allowPrivate: false }).ok).toBe(true);
    expect(checkWebhookUrl('https://example.com:443/hook', { allowPrivate: false }).ok).toBe(true);
    for (const url of ['https://example.com:8443/hook', 'https://93.184.216.34:22/', 'https://example.com:65535/', 'https://example.com:80/']) {
      expect(checkWebhookUrl(url, { allowPrivate: false })).toMatchObject({ ok: false, reason: expect.stringMatching(/port \d+ is not an allowed port \(allowed: 443\)/) });
    }
    const wide = { allowPrivate: false, allowedPorts: [[443, 443], [8000, 8999]] as const };
    expect(checkWebhookUrl('https://example.com:8443/hook', wide).ok).toBe(true);
    expect(checkWebhookUrl('https://example.com:9000/hook', wide)).toMatchObject({ ok: false, reason: expect.stringMatching(/allowed: 443, 8000-8999/) });
    // The relaxation for local receivers does not lift the port list: the receiver's port is listed like any other.
    expect(checkWebhookUrl('http://127.0.0.1:65535/', { allowPrivate: true }).ok).toBe(false);
    expect(checkWebhookUrl('http://127.0.0.1/', { allowPrivate: true }).ok).toBe(false);
    expect(checkWebhookUrl('http://127.0.0.1:65535/', { allowPrivate: true, allowedPorts: [[65535, 65535]] }).ok).toBe(true);
  });

  it('reads OPENWOP_WEBHOOK_ALLOWED_PORTS: ports, ranges or *, 443 when unset', () => {
    expect(loadWebhookSettings({}).allowedPorts).toEqual([[443, 443]]);
    expect(loadWebhookSettings({ OPENWOP_WEBHOOK_ALLOWED_PORTS: '' }).allowedPorts).toEqual([[443, 443]]);
    expect(loadWebhookSettings({ OPENWOP_WEBHOOK_ALLOWED_PORTS: ' 443, 8443 ,9000-9100' }).allowedPorts).toEqual([[443, 443], [8443, 8443], [9000, 9100]]);
    expect(loadWebhookSettings({ OPENWOP_WEBHOOK_ALLOWED_PORTS: '*' }).allowedPorts).toEqual([[1, 65535]]);
    for (const bad of ['0', '65536', 'https', '443,', '9100-9000', '1-2-3', '-5', '443;8443', '443,,8443']) {
      expect(() => loadWebhookSettings({ OPENWOP_WEBHOOK_ALLOWED_PORTS: bad })).toThrow(/OPENWOP_WEBHOOK_ALLOWED_PORTS must be/);
    }
  });

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
    expect(checkWebhookUrl('http://127.0.0.1:9/hook', { allowPrivate: true, allowedPorts: [[9, 9]] }).ok).toBe(true);
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
