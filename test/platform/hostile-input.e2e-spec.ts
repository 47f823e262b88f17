import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { MAX_PARAM_LENGTH } from '../../src/platform/http/framework-errors';
import { toEnvelope } from '../../src/platform/errors/error-envelope.filter';
import { ALL_HOST_SCOPES } from '../../src/platform/identity/scopes';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { createTestApp, TestApp } from '../support/test-app';

/**
 * Hostile input against EVERY write operation of the committed OpenAPI document (so a new route is
 * covered the day it is added): deep nesting, wide objects, huge strings and arrays, NUL characters,
 * lone surrogates and prototype-pollution keys, sent with a key that holds every scope. Each answer must
 * be the canonical 4xx envelope (never a 5xx) and nothing may be written.
 */

type Schema = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Operation = { method: string; path: string; op: Schema };

const doc = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'schemas', 'openapi.json'), 'utf8')) as Schema;

function writeOperations(): Operation[] {
  const out: Operation[] = [];
  for (const [p, item] of Object.entries(doc.paths as Record<string, Schema>)) {
    for (const method of ['post', 'put', 'patch', 'delete']) {
      if (item[method]) out.push({ method: method.toUpperCase(), path: p, op: item[method] });
    }
  }
  return out;
}

function resolve(s: Schema | undefined): Schema {
  let cur = s ?? {};
  for (let i = 0; i < 20 && typeof cur.$ref === 'string'; i++) {
    const parts = (cur.$ref as string).replace(/^#\//, '').split('/');
    cur = parts.reduce<Schema>((acc, k) => (acc ?? {})[k], doc);
  }
  return cur ?? {};
}

/** A plausible body for a schema: every declared property filled with a value of its type. */
function skeleton(schemaIn: Schema | undefined, depth = 0): unknown {
  const s = resolve(schemaIn);
  const alt = s.oneOf ?? s.anyOf ?? s.allOf;
  if (Array.isArray(alt) && alt.length) return skeleton(alt[0], depth);
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type;
  if (type === 'string') return s.format === 'uuid' ? randomUUID() : s.format === 'date-time' ? new Date().toISOString() : 'sample';
  if (type === 'integer' || type === 'number') return 1;
  if (type === 'boolean') return true;
  if (type === 'array') return depth < 3 ? [skeleton(s.items, depth + 1)] : [];
  if (type === 'object' || s.properties) {
    const o: Record<string, unknown> = {};
    if (depth < 3) for (const [k, v] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) o[k] = skeleton(v, depth + 1);
    return o;
  }
  return 'sample';
}

function bodySchema(op: Schema): Schema | undefined {
  return op.requestBody?.content?.['application/json']?.schema;
}

function fillPath(p: string, value: (name: string) => string): string {
  return p.replace(/\{([^}]+)\}/g, (_m, name: string) => value(name));
}

interface Case {
  name: string;
  status: number;
  /** Raw JSON text of the body. */
  body?: string;
  query?: string;
  pathValue?: string;
  /** Appended to the path as sent (an undecodable escape). */
  pathSuffix?: string;
  /** The `error` the envelope must carry (default: by status). */
  error?: string;
}

const S = (v: unknown) => JSON.stringify(v);

function cases(op: Schema, limits: { maxKeys: number; maxItems: number; maxStringLength: number }, bodyLimit: number): Case[] {
  const base = skeleton(bodySchema(op));
  const obj = base && typeof base === 'object' && !Array.isArray(base) ? (base as Record<string, unknown>) : {};
  const props = Object.keys(obj);
  const stringProps = props.filter((k) => typeof obj[k] === 'string');
  const host = props[0] ?? 'field';
  const deepObject = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;
  const deepArray = `${'['.repeat(5000)}${']'.repeat(5000)}`;
  const wide = `{${Array.from({ length: Math.max(20_000, limits.maxKeys + 1) }, (_, i) => `"k${i}":0`).join(',')}}`;
  const hugeArray = `[${Array.from({ length: Math.max(100_000, limits.maxItems + 1) }, () => '0').join(',')}]`;
  const huge = 'x'.repeat(limits.maxStringLength + 1);
  expect(huge.length + 100).toBeLessThan(bodyLimit); // the string limit, not the body limit, must be what refuses it
  expect(wide.length).toBeLessThan(bodyLimit);
  const withProp = (k: string, rawValue: string) => S({ ...obj, [k]: '__HOLE__' }).replace('"__HOLE__"', rawValue);
  const out: Case[] = [
    { name: 'deep object (5,000 levels)', status: 400, body: deepObject },
    { name: 'deep array (5,000 levels)', status: 400, body: deepArray },
    { name: `deep object under "${host}"`, status: 400, body: withProp(host, deepObject) },
    { name: 'wide object', status: 413, body: wide },
    { name: `wide object under "${host}"`, status: 413, body: withProp(host, wide) },
    { name: 'huge array', status: 413, body: hugeArray },
    { name: `huge array under "${host}"`, status: 413, body: withProp(host, hugeArray) },
    { name: '__proto__ key', status: 400, body: `{"__proto__":{"polluted":true},${S(obj).slice(1)}`.replace(',}', '}') },
    { name: 'constructor.prototype key', status: 400, body: S({ ...obj, constructor: { prototype: { polluted: true } } }) },
    { name: 'NUL in a property name', status: 400, body: S({ ...obj, 'a\u0000b': 'x' }) },
    { name: 'lone surrogate in a property name', status: 400, body: `{"a\\ud800":1}` },
    { name: 'NUL in a query value', status: 400, body: S(obj), query: 'x=a%00b' },
    { name: 'NUL in a path parameter', status: 400, body: S(obj), pathValue: 'a%00b' },
    { name: 'huge query value', status: 413, body: S(obj), query: `x=${huge}` },
    // Numbers too large for a double parse to Infinity, which has no JSON form.
    { name: 'non-finite number at the root', status: 400, body: '1e400' },
    { name: `non-finite number under "${host}"`, status: 400, body: withProp(host, '1e400') },
    { name: `negative non-finite number in an array under "${host}"`, status: 400, body: withProp(host, '[1, -1e400]') },
    // URLs the router cannot decode or route, answered before any route runs.
    { name: 'undecodable path (%ud800)', status: 400, body: S(obj), pathSuffix: '%ud800' },
    { name: 'undecodable path parameter', status: 400, body: S(obj), pathValue: '%ud800' },
    { name: 'path parameter over the router limit', status: 414, body: S(obj), pathValue: 'x'.repeat(MAX_PARAM_LENGTH + 1), error: 'uri_too_long' },
  ];
  for (const k of props) {
    const v = obj[k];
    if (typeof v === 'number') out.push({ name: `non-finite number in "${k}"`, status: 400, body: withProp(k, '1e400') });
    else if (v && typeof v === 'object' && !Array.isArray(v)) out.push({ name: `non-finite number nested in "${k}"`, status: 400, body: withProp(k, '{"n":1e400}') });
  }
  for (const k of stringProps.length ? stringProps : ['name']) {
    out.push({ name: `huge string in "${k}"`, status: 413, body: withProp(k, S(huge)) });
    out.push({ name: `NUL in "${k}"`, status: 400, body: withProp(k, S('a\u0000b')) });
    out.push({ name: `lone high surrogate in "${k}"`, status: 400, body: withProp(k, '"a\\ud800b"') });
    out.push({ name: `lone low surrogate in "${k}"`, status: 400, body: withProp(k, '"\\udc00"') });
  }
  // A path without parameters has nothing to poison.
  return out;
}

describe('hostile input on every write route of the OpenAPI document', () => {
  let t: TestApp;
  let key: string;
  const envelopeErrors = (body: unknown) => SchemaRegistry.shared().validate('error-envelope', body);

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    key = await t.key({ scopes: [...ALL_HOST_SCOPES] });
  });
  afterAll(() => t.close());

  async function rowCounts(): Promise<Record<string, number>> {
    const tables = (await t.ds.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
    )) as Array<{ table_name: string }>;
    const counts: Record<string, number> = {};
    for (const { table_name } of tables) {
      const [{ n }] = (await t.ds.query(`SELECT count(*)::int AS n FROM "${table_name}"`)) as Array<{ n: number }>;
      counts[table_name] = n;
    }
    return counts;
  }

  it('the document lists the write routes (the sweep is not vacuous)', () => {
    const ops = writeOperations();
    expect(ops.length).toBeGreaterThanOrEqual(30);
    expect(ops.map((o) => `${o.method} ${o.path}`)).toEqual(expect.arrayContaining(['POST /v1/connections', 'POST /v1/proposals', 'PATCH /v1/proposals/{id}', 'POST /v1/keys', 'PUT /v1/connections/{id}/credential']));
  });

  it('answers every hostile request with the canonical 4xx envelope and writes nothing', async () => {
    const before = await rowCounts();
    expect(Object.keys(before).length).toBeGreaterThan(5);
    expect(before.api_key).toBe(1);
    const failures: string[] = [];
    let sent = 0;
    for (const { method, path: p, op } of writeOperations()) {
      for (const c of cases(op, t.config.json, t.config.maxRequestBodyBytes)) {
        if (c.pathValue && !p.includes('{')) continue;
        const url = fillPath(p, () => c.pathValue ?? randomUUID()) + (c.pathSuffix ?? '') + (c.query ? `?${c.query}` : '');
        const res = await t.http(method, url, { token: key, rawBody: c.body, headers: { 'content-type': 'application/json' } });
        sent++;
        const problems: string[] = [];
        if (res.status !== c.status) problems.push(`status ${res.status} (want ${c.status})`);
        const errs = envelopeErrors(res.body);
        if (errs.length) problems.push(`not the canonical envelope: ${JSON.stringify(errs)}`);
        if (res.status === 413 && res.body?.error !== 'payload_too_large') problems.push(`error ${res.body?.error}`);
        if (res.status === 400 && res.body?.error !== 'validation_error') problems.push(`error ${res.body?.error}`);
        if (c.error && res.body?.error !== c.error) problems.push(`error ${res.body?.error} (want ${c.error})`);
        if (problems.length) failures.push(`${method} ${p} [${c.name}]: ${problems.join('; ')} ${res.text.slice(0, 200)}`);
      }
    }
    expect(failures).toEqual([]);
    expect(sent).toBeGreaterThan(500);
    expect(await rowCounts()).toEqual(before);
  }, 180_000);

  it('lets a body at the limits through to the route (the guard refuses only what exceeds them)', async () => {
    const { maxDepth, maxKeys } = t.config.json;
    // Nesting exactly at the limit and an object with exactly maxKeys properties reach validation (400 for
    // the unknown field, not the guard's refusal); a plain valid body creates a key.
    const deep = `{"principal":"p","scopes":["runs:read"],"extra":${'['.repeat(maxDepth - 1)}${']'.repeat(maxDepth - 1)}}`;
    const deepRes = await t.http('POST', '/v1/keys', { token: key, rawBody: deep, headers: { 'content-type': 'application/json' } });
    expect(deepRes.status).toBe(400);
    expect(JSON.stringify(deepRes.body.details)).toMatch(/extra/);
    const wide = `{"principal":"p","scopes":["runs:read"],"extra":{${Array.from({ length: maxKeys }, (_, i) => `"k${i}":0`).join(',')}}}`;
    const wideRes = await t.http('POST', '/v1/keys', { token: key, rawBody: wide, headers: { 'content-type': 'application/json' } });
    expect(wideRes.status).toBe(400);
    expect(JSON.stringify(wideRes.body.details)).toMatch(/extra/);
    const ok = await t.http('POST', '/v1/keys', { token: key, body: { principal: 'p', name: 'caf\u00e9 \u{1F600}', scopes: ['runs:read'] } });
    expect(ok.status).toBe(201);
  });

  it('answers requests refused before routing (header overflow, bad URL, unreadable HTTP) with the envelope over a real socket', async () => {
    await t.app.listen(0, '127.0.0.1');
    const { port } = t.app.getHttpServer().address() as net.AddressInfo;
    const raw = (request: string) =>
      new Promise<{ status: number; body: unknown }>((resolve, reject) => {
        const socket = net.createConnection({ host: '127.0.0.1', port });
        let text = '';
        socket.on('data', (d) => (text += d.toString('utf8')));
        socket.on('error', () => undefined);
        socket.on('close', () => {
          const m = /^HTTP\/1\.1 (\d{3})[^]*?\r\n\r\n([^]*)$/.exec(text);
          if (!m) return reject(new Error(`no HTTP answer: ${JSON.stringify(text.slice(0, 200))}`));
          let body: unknown = m[2];
          try {
            body = JSON.parse(m[2]);
          } catch {
            /* left as text: the assertion names it */
          }
          resolve({ status: Number(m[1]), body });
        });
        socket.setTimeout(15_000, () => socket.destroy());
        socket.end(request);
      });
    const cases: Array<[string, string, number, string]> = [
      ['a 300,000-character path', `GET /v1/runs/${'a'.repeat(300_000)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`, 431, 'headers_too_large'],
      ['a header over the limit', `GET /v1/runs HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(70_000)}\r\n\r\n`, 431, 'headers_too_large'],
      ['an undecodable path', `GET /v1/runs/%ud800 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`, 400, 'validation_error'],
      ['a request line that is not HTTP', `HELLO THERE\r\n\r\n`, 400, 'validation_error'],
    ];
    for (const [label, request, status, error] of cases) {
      const res = await raw(request);
      expect([label, res.status, envelopeErrors(res.body), (res.body as { error?: string }).error]).toEqual([label, status, [], error]);
    }
  });

  it('maps an aborted body (the client stopped sending) to the envelope', () => {
    const aborted = Object.assign(new Error('aborted'), { code: 'ECONNRESET', statusCode: 400 });
    expect(toEnvelope(aborted, 'r1')).toEqual({ status: 400, body: { error: 'validation_error', message: 'The request body was not received completely.' } });
  });

  it('refuses a non-JSON body with 415, text/plain included', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
      const res = await t.http('POST', '/v1/keys', { token: key, rawBody: 'principal=p', headers: { 'content-type': type } });
      expect(res.status).toBe(415);
      expect(envelopeErrors(res.body)).toEqual([]);
    }
  });
});
