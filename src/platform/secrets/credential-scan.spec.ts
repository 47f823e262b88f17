import { scanForCredentials } from './credential-scan';

describe('scanForCredentials', () => {
  it('flags credential-named properties by exact, normalized name, without echoing the value', () => {
    const findings = scanForCredentials({ provider: 'anthropic', apiKey: 'sk-conformance-canary' });
    expect(findings).toEqual([{ path: '/apiKey', reason: expect.stringContaining('apiKey') }]);
    expect(JSON.stringify(findings)).not.toContain('sk-conformance-canary');
    for (const key of ['api_key', 'API-KEY', 'clientSecret', 'client_secret', 'password', 'Authorization', 'accessToken', 'refresh_token', 'privateKey', 'token', 'secret']) {
      expect(scanForCredentials({ [key]: 'plain-value-1234' }).map((f) => f.path)).toEqual([`/${key}`]);
    }
  });

  it('finds credentials nested deep, in arrays and under credential-named structures', () => {
    const doc = {
      a: { b: { c: [{ d: { password: 'hunter2-hunter2' } }] } },
      headers: [{ name: 'x', Authorization: 'Bearer abcdefghijkl' }],
      token: ['one-token-value'],
      secret: { value: 'deep-secret-value' },
    };
    expect(scanForCredentials(doc).map((f) => f.path).sort()).toEqual(
      ['/a/b/c/0/d/password', '/headers/0/Authorization', '/secret/value', '/token/0'].sort(),
    );
  });

  it('flags values that look like credentials under any key', () => {
    const cases: Record<string, string> = {
      bearer: 'Bearer eyabcdefghijklmnop',
      pem: '-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----',
      jwt: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      aws: 'AKIAIOSFODNN7EXAMPLE',
      openai: 'sk-proj-abcdefghijklmnopqrstuv',
      github: 'ghp_abcdefghijklmnopqrstuvwxyz0123456789',
      slack: 'xoxb-1234567890-abcdefghij',
      url: 'postgres://admin:s3cret@db.example.com/app',
    };
    for (const [name, value] of Object.entries(cases)) {
      const f = scanForCredentials({ note: [value] });
      expect({ name, paths: f.map((x) => x.path) }).toEqual({ name, paths: ['/note/0'] });
      expect(JSON.stringify(f)).not.toContain(value);
    }
  });

  it('lets references, redaction markers and look-alike names pass', () => {
    expect(
      scanForCredentials({
        provider: 'slack',
        credentialRef: 'cred:abc',
        apiKey: '[REDACTED:conn-1]',
        password: '',
        token: null,
        secretsToRebind: ['slack'],
        tokenUrl: 'https://example.com/oauth/token',
        maxTokens: 2048,
        auth: { type: 'credential', key: 'slack-bot' },
        text: 'Ask the task-management tool; see https://example.com/docs.',
        authorization: { type: 'oauth2', scopes: ['read'] },
      }),
    ).toEqual([]);
  });

  it('honours exact exempt paths and the base path', () => {
    const manifest = { provider: { auth: { endpoints: { token: 'https://x.example/token' } }, endpoints: { token: 'https://x.example/token' } } };
    expect(scanForCredentials(manifest, { exemptPaths: ['/provider/auth/endpoints/token'], basePath: '/manifest' })).toEqual([
      { path: '/manifest/provider/endpoints/token', reason: expect.any(String) },
    ]);
  });

  it('survives very deep nesting and cycles', () => {
    let deep: Record<string, unknown> = { apiKey: 'abcdefgh' };
    for (let i = 0; i < 20000; i++) deep = { n: deep };
    expect(scanForCredentials(deep)).toHaveLength(1);
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(scanForCredentials(cyclic)).toEqual([]);
  });
});
