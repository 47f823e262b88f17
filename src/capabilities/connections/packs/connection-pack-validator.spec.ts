import * as fs from 'node:fs';
import * as path from 'node:path';
import { SchemaRegistry } from '../../../platform/schemas/schema-registry';
import { scanForCredentialMaterial } from './credential-material-scan';
import { validateConnectionPackManifest } from './connection-pack-validator';

const FIXTURES = path.resolve(__dirname, '../../../../test/fixtures/connection-packs');
const load = (name: string): Record<string, any> => JSON.parse(fs.readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8'));
const codes = (m: unknown) => validateConnectionPackManifest(m).map((e) => e.code);

describe('connection pack fixtures', () => {
  it.each(['connection-pack-github', 'connection-pack-apihosts-valid', 'connection-pack-acme-widgets', 'connection-pack-acme-widgets-rival'])(
    '%s validates against the official manifest schema and passes every install check',
    (name) => {
      expect(SchemaRegistry.shared().validate('connection-pack-manifest', load(name))).toEqual([]);
      expect(validateConnectionPackManifest(load(name))).toEqual([]);
    },
  );

  it('the apihosts fixture needs apiHosts (openapi reach)', () => {
    const m = load('connection-pack-apihosts-valid');
    delete m.provider.apiHosts;
    const v = SchemaRegistry.shared().validate('connection-pack-manifest', m);
    expect(v.some((x) => x.keyword === 'required' && x.path === '/provider/apiHosts')).toBe(true);
  });
});

describe('credential-material scan (runs before schema validation)', () => {
  const BLOCKLIST = ['clientSecret', 'client_secret', 'apiKey', 'api_key', 'token', 'accessToken', 'refreshToken', 'password', 'privateKey', 'secret', 'Client-Secret'];

  it.each(BLOCKLIST)('refuses %s at the root, under provider and under provider.auth', (key) => {
    for (const where of ['root', 'provider', 'auth'] as const) {
      const m = load('connection-pack-github');
      const target = where === 'root' ? m : where === 'provider' ? m.provider : m.provider.auth;
      target[key] = 'x';
      const errors = validateConnectionPackManifest(m);
      expect(errors.map((e) => e.code)).toEqual(['connection_pack_credential_material']);
      expect(errors[0].path).toBe(where === 'root' ? `/${key}` : where === 'provider' ? `/provider/${key}` : `/provider/auth/${key}`);
    }
  });

  it('exempts only the token endpoint at exactly provider.auth.endpoints.token', () => {
    expect(scanForCredentialMaterial(load('connection-pack-github'))).toEqual([]);
    const smuggled = load('connection-pack-github');
    smuggled.provider.endpoints = { token: 'https://example.com/token' };
    expect(scanForCredentialMaterial(smuggled)).toEqual([{ path: '/provider/endpoints/token', reason: 'name' }]);
    const slashed = { 'provider/auth/endpoints': { token: 'x' } };
    expect(scanForCredentialMaterial(slashed)).toEqual([{ path: '/provider~1auth~1endpoints/token', reason: 'name' }]);
    const nested = load('connection-pack-github');
    nested.provider.auth.endpoints.token = { value: 'x' };
    expect(scanForCredentialMaterial(nested)).toEqual([{ path: '/provider/auth/endpoints/token', reason: 'name' }]);
  });

  it('finds a planted key anywhere: in arrays, deep objects, and by value shape', () => {
    const inArray = load('connection-pack-github');
    inArray.provider.auth.scopes.read.push({ key: 'x', label: 'x', scopes: [], apiKey: 'abc' });
    expect(validateConnectionPackManifest(inArray)[0]).toMatchObject({ code: 'connection_pack_credential_material', path: '/provider/auth/scopes/read/1/apiKey' });

    const byValue = load('connection-pack-github');
    byValue.description = 'use ghs_abcdefghijklmnopqrstuvwxyz0123 to log in';
    expect(codes(byValue)).toEqual(['connection_pack_credential_material']);

    const userInfo = load('connection-pack-github');
    userInfo.provider.docsUrl = 'https://admin:hunter2@docs.example.com/';
    expect(codes(userInfo)).toEqual(['connection_pack_credential_material']);
  });

  it('reports the path and never the value', () => {
    const m = load('connection-pack-github');
    m.provider.auth.clientSecret = 'ghs_conformance_canary';
    expect(JSON.stringify(validateConnectionPackManifest(m))).not.toContain('ghs_conformance_canary');
  });

  it('wins over schema errors in a manifest that is also malformed', () => {
    expect(codes({ kind: 'node', provider: { auth: { clientSecret: 'x' } } })).toEqual(['connection_pack_credential_material']);
  });
});

describe('schema and semantic checks', () => {
  it('refuses two reach keys, an empty reach and an unknown reach with schema paths', () => {
    const two = load('connection-pack-github');
    two.provider.reach.openapi = { ref: 'https://api.github.com/openapi.json' };
    expect(validateConnectionPackManifest(two)).toContainEqual(expect.objectContaining({ code: 'validation_error', path: '/provider/reach' }));
    const empty = load('connection-pack-github');
    empty.provider.reach = {};
    expect(codes(empty)).toContain('validation_error');
    const grpc = load('connection-pack-github');
    grpc.provider.reach = { grpc: { url: 'https://x.example.com' } };
    expect(codes(grpc)).toContain('validation_error');
  });

  it('refuses a non-https endpoint', () => {
    const m = load('connection-pack-github');
    m.provider.auth.endpoints.authorize = 'http://github.com/login/oauth/authorize';
    expect(validateConnectionPackManifest(m)).toContainEqual(expect.objectContaining({ code: 'validation_error', path: '/provider/auth/endpoints/authorize' }));
  });

  it('refuses https URLs with user info or an http OpenAPI ref (semantic)', () => {
    const m = load('connection-pack-github');
    m.provider.auth.endpoints.revoke = 'https://someone@github.com/revoke';
    expect(validateConnectionPackManifest(m)).toEqual([expect.objectContaining({ code: 'connection_pack_insecure_endpoint', path: '/provider/auth/endpoints/revoke' })]);
    const o = load('connection-pack-apihosts-valid');
    o.provider.reach.openapi.ref = 'http://graph.facebook.com/openapi.json';
    expect(codes(o)).toEqual(['connection_pack_insecure_endpoint']);
    const inPack = load('connection-pack-apihosts-valid');
    inPack.provider.reach.openapi.ref = 'openapi/meta.json';
    expect(codes(inPack)).toEqual([]);
  });

  it('refuses a wrong kind as pack_kind_invalid and a nodes[] array as a schema error', () => {
    const m = load('connection-pack-github');
    m.kind = 'node';
    expect(codes(m)).toEqual(['pack_kind_invalid']);
    const n = load('connection-pack-github');
    n.nodes = [];
    expect(codes(n)).toEqual(['validation_error']);
  });

  it.each(['127.0.0.1', '10.0.0.1', '*.facebook.com', 'graph.facebook.com:8443', 'facebook', 'Facebook.com'])('refuses apiHosts entry %s', (host) => {
    const m = load('connection-pack-apihosts-valid');
    m.provider.apiHosts = [host];
    expect(validateConnectionPackManifest(m)).toContainEqual(expect.objectContaining({ code: 'connection_pack_invalid_api_host', path: '/provider/apiHosts/0' }));
  });

  it('accepts a prerelease version and an omitted vendor; refuses a vendor array', () => {
    const pre = load('connection-pack-github');
    pre.version = '1.0.0-alpha.1';
    delete pre.provider.vendor;
    expect(codes(pre)).toEqual([]);
    const arr = load('connection-pack-github');
    arr.provider.vendor = ['Google'];
    expect(validateConnectionPackManifest(arr)).toContainEqual(expect.objectContaining({ path: '/provider/vendor' }));
  });

  it('refuses an oversized manifest before schema validation', () => {
    const m = load('connection-pack-github');
    m.keywords = Array.from({ length: 40 }, (_, i) => `k${i}`);
    m.description = 'x'.repeat(1000);
    expect(validateConnectionPackManifest(m, { maxBytes: 512 })).toEqual([expect.objectContaining({ code: 'connection_pack_too_large' })]);
  });

  it('refuses a non-object manifest', () => {
    expect(codes('nope')).toEqual(['validation_error']);
    expect(codes([1])).toEqual(['validation_error']);
    expect(codes(null)).toEqual(['validation_error']);
  });
});
