/**
 * The agent workspace (RFC 0059 §A/§C, docs/workspace.md): discovery, the file routes, optimistic
 * concurrency, the ceilings, path rules, scopes, tenant and workspace isolation, the event and the
 * audit entries of writes, and the store switched off.
 */
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { createTestApp, HttpResult, TestApp } from '../support/test-app';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const FILES = '/v1/host/workspace/files';
const RW = ['workspace:read', 'workspace:write'];
const schemas = SchemaRegistry.shared();

function envelope(res: HttpResult, status: number, error: string): void {
  expect([res.status, res.body?.error]).toEqual([status, error]);
  expect(schemas.validate('error-envelope', res.body)).toEqual([]);
}

describe('agent workspace (RFC 0059)', () => {
  let t: TestApp;
  let a: string;
  let b: string;
  const put = (token: string, path: string, body: unknown, headers: Record<string, string> = {}) => t.http('PUT', `${FILES}/${path}`, { token, body, headers });
  const get = (token: string, path: string) => t.http('GET', `${FILES}/${path}`, { token });

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_WORKSPACE_MAX_FILE_BYTES: '2048', OPENWOP_WORKSPACE_MAX_FILES: '5', OPENWOP_WORKSPACE_MAX_VERSIONS: '3' } });
    a = await t.key({ tenant: 'acme', principal: 'alice', scopes: RW });
    b = await t.key({ tenant: 'globex', principal: 'bob', scopes: RW });
  });
  afterAll(() => t.close());

  it('advertises workspace from its settings, valid against the published capabilities schema', async () => {
    const doc = (await t.http('GET', '/.well-known/openwop', { token: a })).body as Json;
    expect(doc.workspace).toEqual({ supported: true, versioned: true, maxFileBytes: 2048, maxFiles: 5, maxVersions: 3 });
    const anonymous = (await t.http('GET', '/.well-known/openwop')).body as Json;
    expect(anonymous.workspace).toEqual(doc.workspace);
  });

  it('PUT creates version 1, GET reads it back, the list holds its metadata only, DELETE removes it', async () => {
    const created = await put(a, 'notes%2FCRUD.md', { content: 'first body' });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({ path: 'notes/CRUD.md', content: 'first body', contentType: 'text/markdown', version: 1, etag: '"v1"', updatedAt: expect.any(String) });
    expect(created.headers.etag).toBe('"v1"');
    expect(schemas.validate('workspace-file', created.body)).toEqual([]);
    // A raw slash and %2F name the same file.
    const got = await get(a, 'notes/CRUD.md');
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created.body);
    expect(got.headers.etag).toBe('"v1"');
    const list = await t.http('GET', FILES, { token: a });
    expect(list.status).toBe(200);
    const row = (list.body.files as Json[]).find((f) => f.path === 'notes/CRUD.md');
    expect(row).toEqual({ path: 'notes/CRUD.md', contentType: 'text/markdown', version: 1, etag: '"v1"', updatedAt: created.body.updatedAt });
    expect(list.body.nextCursor).toBeNull();
    const del = await t.http('DELETE', `${FILES}/notes/CRUD.md`, { token: a });
    expect(del.status).toBe(204);
    envelope(await get(a, 'notes/CRUD.md'), 404, 'not_found');
    envelope(await t.http('DELETE', `${FILES}/notes/CRUD.md`, { token: a }), 404, 'not_found');
    expect(((await t.http('GET', FILES, { token: a })).body.files as Json[]).map((f) => f.path)).not.toContain('notes/CRUD.md');
    // Written again after the delete, the file continues its version sequence (2 was the tombstone): an old etag never matches again.
    const again = await put(a, 'notes/CRUD.md', { content: 'back', contentType: 'text/plain' });
    expect([again.status, again.body.version, again.body.contentType]).toEqual([200, 3, 'text/plain']);
    await t.http('DELETE', `${FILES}/notes/CRUD.md`, { token: a });
  });

  it('If-Match: a stale etag is 409 workspace_conflict with details.currentVersion; the current one bumps the version', async () => {
    const v1 = await put(a, 'DIRECTIVES.md', { content: 'v1' });
    const v2 = await put(a, 'DIRECTIVES.md', { content: 'v2' }, { 'if-match': v1.body.etag });
    expect([v2.status, v2.body.version]).toEqual([200, 2]);
    const stale = await put(a, 'DIRECTIVES.md', { content: 'lost update' }, { 'if-match': v1.body.etag });
    envelope(stale, 409, 'workspace_conflict');
    expect(stale.body.details).toEqual({ currentVersion: 2 });
    expect((await get(a, 'DIRECTIVES.md')).body.content).toBe('v2');
    // A list of tags matches when one is current; an unquoted token is read as the same tag; a weak tag never matches.
    expect((await put(a, 'DIRECTIVES.md', { content: 'v3' }, { 'if-match': `"v9", ${v2.body.etag}` })).body.version).toBe(3);
    expect((await put(a, 'DIRECTIVES.md', { content: 'v4' }, { 'if-match': 'v3' })).body.version).toBe(4);
    envelope(await put(a, 'DIRECTIVES.md', { content: 'x' }, { 'if-match': 'W/"v4"' }), 409, 'workspace_conflict');
    // * needs the file to exist; If-None-Match: * creates only.
    expect((await put(a, 'DIRECTIVES.md', { content: 'v5' }, { 'if-match': '*' })).body.version).toBe(5);
    const absent = await put(a, 'ABSENT.md', { content: 'x' }, { 'if-match': '*' });
    envelope(absent, 409, 'workspace_conflict');
    expect(absent.body.details).toEqual({ currentVersion: 0 });
    envelope(await put(a, 'DIRECTIVES.md', { content: 'x' }, { 'if-none-match': '*' }), 409, 'workspace_conflict');
    expect((await put(a, 'CREATE-ONLY.md', { content: 'x' }, { 'if-none-match': '*' })).body.version).toBe(1);
    // A conditional delete.
    envelope(await t.http('DELETE', `${FILES}/CREATE-ONLY.md`, { token: a, headers: { 'if-match': '"v7"' } }), 409, 'workspace_conflict');
    expect((await t.http('DELETE', `${FILES}/CREATE-ONLY.md`, { token: a, headers: { 'if-match': '"v1"' } })).status).toBe(204);
    for (const bad of ['"unterminated', 'a b', '"v1",', 'x'.repeat(300)]) envelope(await put(a, 'DIRECTIVES.md', { content: 'x' }, { 'if-match': bad }), 400, 'validation_error');
    envelope(await put(a, 'DIRECTIVES.md', { content: 'x' }, { 'if-none-match': '"v1"' }), 400, 'validation_error');
  });

  it('concurrent writes with the same etag: exactly one wins, the others get 409', async () => {
    const base = await put(a, 'RACE.md', { content: 'base' });
    const results = await Promise.all([1, 2, 3, 4].map((i) => put(a, 'RACE.md', { content: `writer ${i}` }, { 'if-match': base.body.etag })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
    const winner = results.find((r) => r.status === 200)!;
    expect((await get(a, 'RACE.md')).body).toMatchObject({ version: 2, content: winner.body.content });
    await t.http('DELETE', `${FILES}/RACE.md`, { token: a });
  });

  it('keeps the latest maxVersions versions: ?version=N reads a retained one, a pruned one is 404', async () => {
    for (let i = 1; i <= 5; i++) expect((await put(a, 'HISTORY.md', { content: `body ${i}` })).body.version).toBe(i);
    for (const v of [3, 4, 5]) expect((await get(a, `HISTORY.md?version=${v}`)).body).toMatchObject({ version: v, content: `body ${v}`, etag: `"v${v}"` });
    for (const v of [1, 2, 6]) envelope(await get(a, `HISTORY.md?version=${v}`), 404, 'not_found');
    for (const v of ['0', '-1', '1.5', 'x', '']) envelope(await get(a, `HISTORY.md?version=${v}`), 400, 'validation_error');
    const [{ n }] = (await t.ds.query(`SELECT count(*)::int AS n FROM "workspace_file_version" WHERE "tenant" = 'acme' AND "path" = 'HISTORY.md'`)) as Array<{ n: number }>;
    expect(n).toBe(3);
    await t.http('DELETE', `${FILES}/HISTORY.md`, { token: a });
    // A deleted file's versions are not served.
    envelope(await get(a, 'HISTORY.md?version=5'), 404, 'not_found');
  });

  it('refuses content over maxFileBytes (counted in UTF-8 bytes) and a file past maxFiles with 413 workspace_too_large', async () => {
    const big = await put(a, 'BIG.md', { content: 'x'.repeat(2049) });
    envelope(big, 413, 'workspace_too_large');
    expect(big.body.details).toEqual({ maxFileBytes: 2048, sizeBytes: 2049 });
    // 683 three-byte characters are 2049 bytes though only 683 characters.
    envelope(await put(a, 'BIG.md', { content: '€'.repeat(683) }), 413, 'workspace_too_large');
    expect((await put(a, 'BIG.md', { content: 'x'.repeat(2048) })).status).toBe(200);
    const live = ((await t.http('GET', FILES, { token: a })).body.files as Json[]).length;
    for (let i = live; i < 5; i++) expect((await put(a, `FILL-${i}.md`, { content: 'x' })).status).toBe(200);
    const over = await put(a, 'ONE-TOO-MANY.md', { content: 'x' });
    envelope(over, 413, 'workspace_too_large');
    expect(over.body.details).toEqual({ maxFiles: 5 });
    // Replacing an existing file is not a new one; after a delete there is room again.
    expect((await put(a, 'BIG.md', { content: 'smaller' })).status).toBe(200);
    expect((await t.http('DELETE', `${FILES}/BIG.md`, { token: a })).status).toBe(204);
    expect((await put(a, 'ONE-TOO-MANY.md', { content: 'x' })).status).toBe(200);
    for (const f of (await t.http('GET', FILES, { token: a })).body.files as Json[]) await t.http('DELETE', `${FILES}/${f.path}`, { token: a });
  });

  it('refuses malformed paths and bodies with 400 validation_error', async () => {
    const a = await t.key({ tenant: 'paths', scopes: RW });
    // (A raw a/../b is resolved by the client before it is sent; its encoded forms reach the host.)
    const paths = ['..%2Fetc%2Fpasswd', 'a%2F..', 'a%2F..%2Fb', '%2Fabs', 'a//b', 'a%2F.%2Fb', 'dir%2F', 'dir/', '.hidden', '-dash', 'sp%20ace', 'x'.repeat(257), 'uni%C3%A9', 'a..b', 'q%3Fx'];
    for (const p of paths) {
      const res = await put(a, p, { content: 'x' });
      expect([p, res.status, res.body?.error]).toEqual([p, 400, 'validation_error']);
      expect([p, (await get(a, p)).status]).toEqual([p, 400]);
    }
    // Longer than the router takes for any path parameter: the same answer as on every other route.
    envelope(await put(a, 'x'.repeat(8193), { content: 'x' }), 414, 'uri_too_long');
    // An empty path names no file.
    envelope(await t.http('PUT', `${FILES}/`, { token: a, body: { content: 'x' } }), 400, 'validation_error');
    expect((await put(a, 'x'.repeat(256), { content: 'x' })).status).toBe(200);
    await t.http('DELETE', `${FILES}/${'x'.repeat(256)}`, { token: a });
    for (const body of [{}, { content: 7 }, { content: 'x', path: 'other.md' }, { content: 'x', version: 3 }, { content: 'x', contentType: 'not a mime' }, { content: 'x', contentType: 5 }, []]) {
      envelope(await put(a, 'BODY.md', body), 400, 'validation_error');
    }
    envelope(await t.http('PUT', `${FILES}/BODY.md`, { token: a, rawBody: '{"content":', headers: { 'content-type': 'application/json' } }), 400, 'validation_error');
    envelope(await t.http('PUT', `${FILES}/BODY.md`, { token: a, body: { content: 'a\u0000b' } }), 400, 'validation_error');
    for (const q of ['prefix=%20', 'prefix=a%3Fb', `prefix=${'a'.repeat(257)}`, 'limit=0', 'limit=501', 'cursor=not+a+cursor']) envelope(await t.http('GET', `${FILES}?${q}`, { token: a }), 400, 'validation_error');
  });

  it('lists in path order with a prefix filter, pages joined by nextCursor', async () => {
    const a = await t.key({ tenant: 'lister', scopes: RW });
    for (const p of ['p/a.md', 'p/b.md', 'p/c/d.md', 'q.md']) await put(a, p, { content: p });
    const byPrefix = await t.http('GET', `${FILES}?prefix=p%2F`, { token: a });
    expect((byPrefix.body.files as Json[]).map((f) => f.path)).toEqual(['p/a.md', 'p/b.md', 'p/c/d.md']);
    const first = await t.http('GET', `${FILES}?limit=2`, { token: a });
    expect((first.body.files as Json[]).map((f) => f.path)).toEqual(['p/a.md', 'p/b.md']);
    const second = await t.http('GET', `${FILES}?limit=2&cursor=${first.body.nextCursor}`, { token: a });
    expect(second.body).toEqual({ files: [expect.objectContaining({ path: 'p/c/d.md' }), expect.objectContaining({ path: 'q.md' })], nextCursor: null });
    // A cursor is bound to its filter.
    envelope(await t.http('GET', `${FILES}?limit=2&prefix=p&cursor=${first.body.nextCursor}`, { token: a }), 400, 'validation_error');
    for (const p of ['p/a.md', 'p/b.md', 'p/c/d.md', 'q.md']) await t.http('DELETE', `${FILES}/${p}`, { token: a });
  });

  it('keeps tenants and workspaces apart: another store answers 404 and lists nothing of it', async () => {
    await put(a, 'SECRET.md', { content: 'acme only' });
    envelope(await get(b, 'SECRET.md'), 404, 'not_found');
    envelope(await t.http('DELETE', `${FILES}/SECRET.md`, { token: b }), 404, 'not_found');
    expect((await t.http('GET', FILES, { token: b })).body.files).toEqual([]);
    // globex writing the same path gets its own file, version 1; acme's is untouched.
    expect((await put(b, 'SECRET.md', { content: 'globex' })).body.version).toBe(1);
    expect((await get(a, 'SECRET.md')).body.content).toBe('acme only');
    // A stale-looking If-Match from another tenant says nothing of acme's versions.
    const probe = await put(b, 'SECRET.md', { content: 'x' }, { 'if-match': '"v5"' });
    expect(probe.body.details).toEqual({ currentVersion: 1 });
    // Workspaces of one tenant are separate stores, and the tenant-level credential's store is its own.
    const w1 = await t.key({ tenant: 'acme', workspace: 'w1', principal: 'w1-agent', scopes: RW });
    const w2 = await t.key({ tenant: 'acme', workspace: 'w2', principal: 'w2-agent', scopes: RW });
    envelope(await get(w1, 'SECRET.md'), 404, 'not_found');
    await put(w1, 'IDENTITY.md', { content: 'w1' });
    envelope(await get(w2, 'IDENTITY.md'), 404, 'not_found');
    envelope(await get(a, 'IDENTITY.md'), 404, 'not_found');
    expect((await t.http('GET', FILES, { token: w1 })).body.files.map((f: Json) => f.path)).toEqual(['IDENTITY.md']);
    expect((await t.http('GET', FILES, { token: w2 })).body.files).toEqual([]);
  });

  it('requires workspace:read to read and workspace:write to write (neither implies the other); no credential is 401', async () => {
    const reader = await t.key({ tenant: 'acme', principal: 'reader', scopes: ['workspace:read'] });
    const writer = await t.key({ tenant: 'acme', principal: 'writer', scopes: ['workspace:write'] });
    const other = await t.key({ tenant: 'acme', principal: 'other', scopes: ['runs:read'] });
    expect((await get(reader, 'SECRET.md')).status).toBe(200);
    envelope(await put(reader, 'SECRET.md', { content: 'x' }), 403, 'forbidden');
    envelope(await t.http('DELETE', `${FILES}/SECRET.md`, { token: reader }), 403, 'forbidden');
    expect((await put(writer, 'WRITER.md', { content: 'x' })).status).toBe(200);
    envelope(await get(writer, 'WRITER.md'), 403, 'forbidden');
    envelope(await t.http('GET', FILES, { token: writer }), 403, 'forbidden');
    for (const [m, url] of [['GET', FILES], ['GET', `${FILES}/SECRET.md`], ['PUT', `${FILES}/SECRET.md`], ['DELETE', `${FILES}/SECRET.md`]]) {
      envelope(await t.http(m, url, { token: other, body: m === 'PUT' ? { content: 'x' } : undefined }), 403, 'forbidden');
      envelope(await t.http(m, url, { body: m === 'PUT' ? { content: 'x' } : undefined }), 401, 'unauthenticated');
    }
    // The roles: a viewer reads, an editor writes.
    const viewer = await t.key({ tenant: 'acme', principal: 'v', roles: ['viewer'] });
    const editor = await t.key({ tenant: 'acme', principal: 'e', roles: ['editor'] });
    expect((await get(viewer, 'SECRET.md')).status).toBe(200);
    expect((await put(viewer, 'V.md', { content: 'x' })).status).toBe(403);
    expect((await put(editor, 'E.md', { content: 'x' })).status).toBe(200);
  });

  it('emits content-free workspace.updated on the host event stream, and audits each write', async () => {
    const key = await t.key({ tenant: 'evented', principal: 'ev', scopes: [...RW, 'runs:read', 'audit:read'] });
    await put(key, 'EVENTS.md', { content: 'secret words' });
    await put(key, 'EVENTS.md', { content: 'more secret words' });
    await t.http('DELETE', `${FILES}/EVENTS.md`, { token: key });
    const poll = await t.http('GET', '/v1/runs/host/events/poll?lastSequence=0&timeout=0', { token: key });
    const events = (poll.body.events as Json[]).filter((e) => e.type === 'workspace.updated');
    expect(events.map((e) => e.payload)).toEqual([{ path: 'EVENTS.md', version: 1 }, { path: 'EVENTS.md', version: 2 }, { path: 'EVENTS.md', version: 3 }]);
    expect(poll.text).not.toContain('secret words');
    for (const e of events) expect(schemas.validate('run-event', e)).toEqual([]);
    const audit = (await t.ds.query(`SELECT "action", "entry" FROM "audit_entry" WHERE "tenant" = 'evented' AND "action" LIKE 'workspace.%' ORDER BY "seq"`)) as Array<{ action: string; entry: Json }>;
    expect(audit.map((r) => [r.action, r.entry.resource, r.entry.details.version])).toEqual([
      ['workspace.file-written', { type: 'workspace-file', id: 'EVENTS.md' }, 1],
      ['workspace.file-written', { type: 'workspace-file', id: 'EVENTS.md' }, 2],
      ['workspace.file-deleted', { type: 'workspace-file', id: 'EVENTS.md' }, 3],
    ]);
    expect(JSON.stringify(audit)).not.toContain('secret words');
    expect((await t.http('GET', '/v1/audit/verify', { token: key })).body.chainValid).toBe(true);
    // Another tenant's stream holds none of it.
    const other = await t.key({ tenant: 'globex', principal: 'ev', scopes: ['runs:read'] });
    const theirs = await t.http('GET', '/v1/runs/host/events/poll?lastSequence=0&timeout=0', { token: other });
    expect((theirs.body.events as Json[]).filter((e) => e.payload?.path === 'EVENTS.md')).toEqual([]);
  });

  it('is driven by the client generated from the OpenAPI document', async () => {
    const api = t.api(await t.key({ tenant: 'sdk', scopes: RW }));
    const put = await api.PUT('/v1/host/workspace/files/{path}', { params: { path: { path: 'agent/IDENTITY.md' } }, body: { content: 'I am the release agent.' } });
    expect(put.data).toMatchObject({ path: 'agent/IDENTITY.md', version: 1, etag: '"v1"' });
    const stale = await api.PUT('/v1/host/workspace/files/{path}', { params: { path: { path: 'agent/IDENTITY.md' }, header: { 'If-Match': '"v0"' } }, body: { content: 'x' } });
    expect(stale.error).toMatchObject({ error: 'workspace_conflict', details: { currentVersion: 1 } });
    const got = await api.GET('/v1/host/workspace/files/{path}', { params: { path: { path: 'agent/IDENTITY.md' }, query: { version: 1 } } });
    expect(got.data?.content).toBe('I am the release agent.');
    const list = await api.GET('/v1/host/workspace/files', { params: { query: { prefix: 'agent/', limit: 10 } } });
    expect(list.data?.files.map((f) => f.path)).toEqual(['agent/IDENTITY.md']);
    expect(list.data?.nextCursor).toBeNull();
    const del = await api.DELETE('/v1/host/workspace/files/{path}', { params: { path: { path: 'agent/IDENTITY.md' } } });
    expect(del.response.status).toBe(204);
  });

  it('is served the same whatever OpenWOP-Version is sent (a /v1/host route has no major)', async () => {
    const key = await t.key({ tenant: 'majors', scopes: RW });
    const res = await t.http('PUT', `${FILES}/MAJOR.md`, { token: key, body: { content: 'x' }, headers: { 'openwop-version': '2' } });
    expect(res.status).toBe(200);
    expect(res.headers['openwop-version']).toBeUndefined();
  });
});

describe('agent workspace switched off (OPENWOP_WORKSPACE=false)', () => {
  let t: TestApp;
  afterAll(() => t?.close());

  it('advertises nothing and answers every route 501 capability_not_provided', async () => {
    t = await createTestApp({ env: { OPENWOP_WORKSPACE: 'false' } });
    const key = await t.key({ tenant: 'acme', scopes: RW });
    expect(((await t.http('GET', '/.well-known/openwop')).body as Json).workspace).toBeUndefined();
    for (const [m, url] of [['GET', FILES], ['GET', `${FILES}/A.md`], ['PUT', `${FILES}/A.md`], ['DELETE', `${FILES}/A.md`]]) {
      envelope(await t.http(m, url, { token: key, body: m === 'PUT' ? { content: 'x' } : undefined }), 501, 'capability_not_provided');
    }
  });

  it('refuses ceilings the host cannot reach, and malformed settings, before it starts', async () => {
    await expect(createTestApp({ env: { OPENWOP_WORKSPACE_MAX_FILE_BYTES: '262144' } })).rejects.toThrow(/OPENWOP_WORKSPACE_MAX_FILE_BYTES \(262144\) must be below OPENWOP_JSON_MAX_STRING/);
    await expect(createTestApp({ env: { OPENWOP_WORKSPACE_MAX_FILE_BYTES: '100000', OPENWOP_MAX_BODY_BYTES: '100500' } })).rejects.toThrow(/at least 1024 bytes below OPENWOP_MAX_BODY_BYTES/);
    await expect(createTestApp({ env: { OPENWOP_WORKSPACE: 'maybe' } })).rejects.toThrow(/OPENWOP_WORKSPACE must be true or false/);
    await expect(createTestApp({ env: { OPENWOP_WORKSPACE_MAX_FILES: '0' } })).rejects.toThrow(/OPENWOP_WORKSPACE_MAX_FILES must be between/);
  });
});

describe('agent workspace under protocol major 2 (OPENWOP_PROTOCOL_MAJORS=1,2)', () => {
  let t: TestApp;
  afterAll(() => t?.close());

  it('serves the v2 seams-profile path /conformance/seams/workspace/files from the same store (spec v2 §11)', async () => {
    t = await createTestApp({ env: { OPENWOP_PROTOCOL_MAJORS: '1,2' } });
    const key = await t.key({ tenant: 'acme', scopes: RW });
    const v2 = { 'openwop-version': '2.0' };
    const put = await t.http('PUT', '/conformance/seams/workspace/files/notes%2FV2.md', { token: key, body: { content: 'from v2' }, headers: v2 });
    expect([put.status, put.body.version, put.headers['openwop-version']]).toEqual([200, 1, undefined]);
    expect((await t.http('GET', `${FILES}/notes/V2.md`, { token: key })).body.content).toBe('from v2');
    const list = await t.http('GET', '/conformance/seams/workspace/files', { token: key, headers: v2 });
    expect(list.body.files.map((f: Json) => f.path)).toEqual(['notes/V2.md']);
    const stale = await t.http('PUT', '/conformance/seams/workspace/files/notes/V2.md', { token: key, body: { content: 'x' }, headers: { ...v2, 'if-match': '"v7"' } });
    envelope(stale, 409, 'workspace_conflict');
    expect((await t.http('DELETE', '/conformance/seams/workspace/files/notes/V2.md', { token: key, headers: v2 })).status).toBe(204);
    // Without major 2 served, the seams-profile path is not routed.
    const v1Only = await createTestApp();
    try {
      const k = await v1Only.key({ tenant: 'acme', scopes: RW });
      expect((await v1Only.http('GET', '/conformance/seams/workspace/files', { token: k })).status).toBe(404);
    } finally {
      await v1Only.close();
    }
  });
});
