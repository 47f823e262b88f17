import { compareVersions, decideResolution } from './provider-resolution';
import { buildConsentPlan } from './consent-plan';
import { checkEgress } from './egress-check';
import type { ConnectionProviderDefinition } from '@openwop-host/plugin-sdk';

describe('SemVer §11 precedence', () => {
  it.each([
    ['1.0.0-alpha.1', '1.0.0', -1],
    ['1.0.0', '1.0.0', 0],
    ['1.0.0+build.7', '1.0.0', 0],
    ['1.0.0-alpha', '1.0.0-alpha.1', -1],
    ['1.0.0-alpha.1', '1.0.0-alpha.beta', -1],
    ['1.0.0-2', '1.0.0-10', -1],
    ['1.0.0-x-y', '1.0.0-x', 1],
    ['1.10.0', '1.9.0', 1],
    ['2.0.0', '10.0.0', -1],
  ])('%s vs %s → %d', (a, b, want) => {
    expect(Math.sign(compareVersions(a, b))).toBe(want);
  });

  it('throws on non-SemVer input', () => {
    expect(() => compareVersions('v1', '1.0.0')).toThrow();
  });
});

describe('resolution decision', () => {
  it('an installed pack wins over a built-in at a lower or equal version', () => {
    expect(decideResolution({ version: '1.0.0' }, { version: '1.0.0' })).toEqual({ resolved: true, source: 'pack', version: '1.0.0' });
    expect(decideResolution({ version: '1.2.0' }, { version: '1.0.0' })).toMatchObject({ source: 'pack' });
  });
  it('a prerelease pack below the built-in is a conflict, never a silent pick', () => {
    expect(decideResolution({ version: '1.0.0-alpha.1' }, { version: '1.0.0' })).toEqual({ resolved: false, code: 'connection_provider_conflict' });
  });
  it('a versionless built-in is a fallback; nothing is unresolved', () => {
    expect(decideResolution({ version: '0.0.1' }, {})).toMatchObject({ source: 'pack' });
    expect(decideResolution(undefined, { version: '2.0.0' })).toEqual({ resolved: true, source: 'builtin', version: '2.0.0' });
    expect(decideResolution(undefined, undefined)).toEqual({ resolved: false, code: 'connection_provider_unresolved' });
  });
});

const provider: ConnectionProviderDefinition = {
  id: 'github',
  displayName: 'GitHub',
  category: 'dev',
  auth: {
    kind: 'oauth2',
    scopes: {
      read: [{ key: 'repo.read', label: 'Read', scopes: ['read:org'] }],
      write: [{ key: 'repo.write', label: 'Write', scopes: ['repo'] }],
    },
  },
  reach: { mcp: { server: { url: 'https://api.githubcopilot.com/mcp/', transport: 'http' } } },
};

describe('consent plan', () => {
  it('puts read groups first and write groups in a separate later step', () => {
    const plan = buildConsentPlan(provider, ['read', 'write']);
    expect(plan.steps).toHaveLength(2);
    expect(plan.steps[0]).toEqual({ includesWrite: false, groups: [{ key: 'repo.read', label: 'Read', access: 'read', scopes: ['read:org'] }] });
    expect(plan.steps[1].includesWrite).toBe(true);
    expect(plan.steps[1].groups.every((g) => g.access === 'write')).toBe(true);
  });
  it('a read-only request is exactly one step; write alone still starts with read', () => {
    expect(buildConsentPlan(provider, ['read']).steps).toHaveLength(1);
    const w = buildConsentPlan(provider, ['write']);
    expect(w.steps.map((s) => s.includesWrite)).toEqual([false, true]);
  });
});

describe('egress check (RFC 0120)', () => {
  it('allows exact and dot-anchored suffix matches only', () => {
    expect(checkEgress(['facebook.com'], 'graph.facebook.com')).toEqual({ allowed: true, matched: 'facebook.com' });
    expect(checkEgress(['facebook.com'], 'facebook.com').allowed).toBe(true);
    expect(checkEgress(['facebook.com'], 'Graph.Facebook.COM').allowed).toBe(true);
    for (const h of ['evil.com', 'notfacebook.com', 'facebook.com.evil.com', 'myfacebook.com']) {
      expect(checkEgress(['facebook.com'], h)).toEqual({ allowed: false, code: 'host_not_allowed' });
    }
    expect(checkEgress(['googleads.googleapis.com'], 'bigquery.googleapis.com').allowed).toBe(false);
  });
  it('fails closed without apiHosts and on malformed hosts', () => {
    expect(checkEgress(undefined, 'graph.facebook.com')).toEqual({ allowed: false, code: 'no_api_hosts' });
    expect(checkEgress([], 'graph.facebook.com')).toEqual({ allowed: false, code: 'no_api_hosts' });
    for (const h of ['', 'graph.facebook.com:443', 'graph.facebook.com.', '10.0.0.1', 'https://graph.facebook.com', 'x.facebook.com/path', '.facebook.com']) {
      expect(checkEgress(['facebook.com'], h).allowed).toBe(false);
    }
  });
});
