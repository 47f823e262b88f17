import type { BundleItem } from '@openwop-host/plugin-sdk';
import { DomainError } from '../../platform/errors/domain-error';
import { bundleFromBody, checkBundleCredentials, checkBundleShape, topologicalOrder } from './bundle-checks';

const item = (ref: string, dependsOn: string[] = [], payload: Record<string, unknown> = {}): BundleItem => ({ kind: 'prompt-template', ref, dependsOn, payload });
const bundle = (items: unknown[], extra: Record<string, unknown> = {}) => ({ bundleVersion: '1', source: { origin: 'adapter:test' }, items, ...extra });

function refusal(fn: () => unknown): DomainError {
  try {
    fn();
  } catch (e) {
    if (e instanceof DomainError) return e;
    throw e;
  }
  throw new Error('expected a refusal');
}

describe('bundleFromBody', () => {
  it('accepts {bundle} and the raw bundle', () => {
    const b = bundle([]);
    expect(bundleFromBody({ bundle: b })).toBe(b);
    expect(bundleFromBody(b)).toBe(b);
  });

  it('refuses non-objects and extra properties next to bundle', () => {
    for (const body of [null, 'x', 42, [bundle([])]]) expect(refusal(() => bundleFromBody(body)).status).toBe(422);
    expect(refusal(() => bundleFromBody({ bundle: bundle([]), dryRun: true })).details).toEqual({ properties: ['dryRun'] });
  });
});

describe('checkBundleShape', () => {
  it('accepts the conformance good bundle', () => {
    const good = bundle([
      { kind: 'prompt-template', ref: 'tpl-1', payload: { templateId: 'x' } },
      { kind: 'connection-ref', ref: 'conn-1', dependsOn: ['tpl-1'], payload: { provider: 'slack', credentialRef: 'cred:abc' } },
    ]);
    expect(checkBundleShape(good, 10).items).toHaveLength(2);
  });

  it('refuses an unknown bundleVersion with 422 before anything else', () => {
    for (const v of ['2', 1, undefined]) {
      const e = refusal(() => checkBundleShape({ bundleVersion: v, items: 'nope' }, 10));
      expect([e.status, e.code]).toEqual([422, 'bundle_version_unsupported']);
    }
  });

  it('refuses schema violations: unknown kind, missing ref, extra keys, non-object payload', () => {
    const cases = [
      bundle([{ kind: 'mystery', ref: 'a', payload: {} }]),
      bundle([{ kind: 'pack', payload: {} }]),
      bundle([{ kind: 'pack', ref: 'a', payload: [] }]),
      bundle([], { clientSecret: 'x' }),
      { bundleVersion: '1', source: { origin: 'x', apiKey: 'y' }, items: [] },
      { bundleVersion: '1', items: [] },
    ];
    for (const c of cases) {
      const e = refusal(() => checkBundleShape(c, 10));
      expect([e.status, e.code]).toEqual([422, 'bundle_invalid']);
      expect(JSON.stringify(e.details)).not.toContain('"y"');
    }
  });

  it('refuses duplicate refs', () => {
    const e = refusal(() => checkBundleShape(bundle([item('a'), item('a')]), 10));
    expect(e.details).toEqual({ duplicateItems: [1] });
  });

  it('answers 413 over the item cap', () => {
    const e = refusal(() => checkBundleShape(bundle([item('a'), item('b'), item('c')]), 2));
    expect([e.status, e.code]).toEqual([413, 'payload_too_large']);
  });
});

describe('checkBundleCredentials', () => {
  it('refuses the conformance leaky bundle naming item and path, never the value', () => {
    const leaky = checkBundleShape(bundle([{ kind: 'connection-ref', ref: 'c1', payload: { provider: 'anthropic', apiKey: 'sk-conformance-canary' } }]), 10);
    const e = refusal(() => checkBundleCredentials(leaky));
    expect([e.status, e.code]).toEqual([422, 'bundle_credential_material']);
    expect(e.message).toContain('"c1"');
    expect(e.message).toContain('/payload/apiKey');
    expect(e.details).toMatchObject({ keyPath: 'connection-ref:c1.payload.apiKey' });
    expect(JSON.stringify({ m: e.message, d: e.details })).not.toContain('sk-conformance-canary');
  });

  it('finds leaks nested deep and in arrays, and passes references', () => {
    const deep = checkBundleShape(bundle([item('a', [], { steps: [{ http: { headers: { Authorization: 'Bearer abcdefghijk' } } }] })]), 10);
    expect(refusal(() => checkBundleCredentials(deep)).details).toMatchObject({ findings: [{ ref: 'a', path: '/payload/steps/0/http/headers/Authorization' }] });
    const inRef = checkBundleShape(bundle([item('ghp_abcdefghijklmnopqrstuvwxyz0123456789')]), 10);
    const refLeak = refusal(() => checkBundleCredentials(inRef));
    expect(refLeak.details).toEqual({ keyPath: 'items[0].ref', findings: [{ index: 0, kind: 'prompt-template', path: '/ref', reason: expect.any(String) }] });
    expect(JSON.stringify({ m: refLeak.message, d: refLeak.details })).not.toContain('ghp_');
    const ok = checkBundleShape(bundle([item('a', [], { credentialRef: 'cred:abc', apiKey: '[REDACTED:k1]' })]), 10);
    expect(() => checkBundleCredentials(ok)).not.toThrow();
  });
});

describe('checkBundleCredentials: connection packs', () => {
  const packItem = (payload: Record<string, unknown>): BundleItem => ({ kind: 'pack', ref: 'p', payload });
  const endpoints = { authorize: 'https://example.com/oauth/authorize', token: 'https://example.com/oauth/token' };

  it("exempts a connection pack's token endpoint URL at exactly provider.auth.endpoints.token", () => {
    const ok = checkBundleShape(bundle([packItem({ kind: 'connection', provider: { id: 'x', auth: { kind: 'oauth2', endpoints } } })]), 10);
    expect(() => checkBundleCredentials(ok)).not.toThrow();
  });

  it('still flags a token anywhere else, a token endpoint outside a connection pack, and credential-looking endpoint values', () => {
    const elsewhere = checkBundleShape(bundle([packItem({ kind: 'connection', provider: { id: 'x', endpoints, auth: { kind: 'oauth2' } } })]), 10);
    expect(refusal(() => checkBundleCredentials(elsewhere)).details).toMatchObject({ findings: [{ path: '/payload/provider/endpoints/token' }] });
    const notConnection = checkBundleShape(bundle([packItem({ kind: 'node', provider: { auth: { endpoints } } })]), 10);
    expect(refusal(() => checkBundleCredentials(notConnection)).details).toMatchObject({ findings: [{ path: '/payload/provider/auth/endpoints/token' }] });
    const withPassword = checkBundleShape(
      bundle([packItem({ kind: 'connection', provider: { auth: { endpoints: { token: 'https://user:hunter2hunter2@example.com/token' } } } })]),
      10,
    );
    expect(refusal(() => checkBundleCredentials(withPassword)).details).toMatchObject({ findings: [{ path: '/payload/provider/auth/endpoints/token' }] });
  });
});

describe('topologicalOrder', () => {
  it('orders dependencies first and keeps bundle order among independent items', () => {
    const order = topologicalOrder([item('c', ['b']), item('x'), item('b', ['a']), item('a')]);
    expect(order.map((i) => i.ref)).toEqual(['x', 'a', 'b', 'c']);
  });

  it('refuses a cycle, naming it', () => {
    const e = refusal(() => topologicalOrder([item('free'), item('a', ['c']), item('b', ['a']), item('c', ['b']), item('d', ['a'])]));
    expect([e.status, e.code]).toEqual([422, 'bundle_dependency_cycle']);
    const cycle = (e.details as { cycle: string[] }).cycle;
    expect(new Set(cycle)).toEqual(new Set(['a', 'b', 'c']));
    expect(cycle[0]).toBe(cycle[cycle.length - 1]);
    expect(refusal(() => topologicalOrder([item('self', ['self'])])).details).toEqual({ cycle: ['self', 'self'] });
  });

  it('refuses a dependsOn naming no item of the bundle', () => {
    const e = refusal(() => topologicalOrder([item('a', ['ghost'])]));
    expect([e.status, e.code]).toEqual([422, 'bundle_dependency_unknown']);
    expect(e.details).toEqual({ unknown: [{ ref: 'a', dependsOn: 'ghost' }] });
  });
});
