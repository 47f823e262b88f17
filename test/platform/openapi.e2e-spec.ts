import * as fs from 'node:fs';
import * as path from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import { generateOpenApiDocument } from '../../src/platform/openapi/generate';
import { routeScopesTable } from '../../src/platform/openapi/route-scopes';

const root = path.join(__dirname, '../..');
const committed = (p: string) => fs.readFileSync(path.join(root, p), 'utf8');
const REGENERATE = 'run `npm run openapi:generate` and commit the result';

type Op = Record<string, unknown> & { responses?: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }> };

describe('the OpenAPI document', () => {
  let doc: Record<string, unknown>;
  beforeAll(async () => {
    doc = await generateOpenApiDocument();
  });

  const operations = () =>
    Object.entries(doc.paths as Record<string, Record<string, Op>>).flatMap(([p, ops]) => Object.entries(ops).map(([m, op]) => ({ key: `${m.toUpperCase()} ${p}`, method: m, op })));

  it('is generated deterministically and matches the committed copy', async () => {
    const again = await generateOpenApiDocument();
    expect(JSON.stringify(again)).toBe(JSON.stringify(doc));
    const text = `${JSON.stringify(doc, null, 2)}\n`;
    if (committed('schemas/openapi.json') !== text) throw new Error(`schemas/openapi.json is out of date: ${REGENERATE}`);
  });

  it('keeps the who-can-reach-what table in sync (review its diff like a permission change)', () => {
    if (committed('schemas/route-scopes.txt') !== routeScopesTable(doc)) throw new Error(`schemas/route-scopes.txt is out of date: ${REGENERATE}`);
  });

  it('is valid OpenAPI 3.1', async () => {
    expect(doc.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(JSON.parse(JSON.stringify(doc)))).resolves.toBeDefined();
  });

  it('gives every operation a unique operationId, a tag, its scopes, its security and canonical errors', () => {
    const ids = new Set<string>();
    const problems: string[] = [];
    for (const { key, method, op } of operations()) {
      if (typeof op.operationId !== 'string') problems.push(`${key}: no operationId`);
      else if (ids.has(op.operationId)) problems.push(`${key}: duplicate operationId ${op.operationId}`);
      else ids.add(op.operationId);
      if (!Array.isArray(op.tags) || !op.tags.length) problems.push(`${key}: no tag`);
      if (!Array.isArray(op['x-required-scopes'])) problems.push(`${key}: no x-required-scopes`);
      // A public operation (no scopes: the signed interrupt-token routes, whose token is the credential) has no bearer requirement and no 401.
      const isPublic = Array.isArray(op['x-required-scopes']) && op['x-required-scopes'].length === 0 && !(Array.isArray(op.security) && op.security.length);
      if (!isPublic && (!Array.isArray(op.security) || !op.security.length)) problems.push(`${key}: no security requirement`);
      const responses = op.responses ?? {};
      const success = Object.keys(responses).filter((s) => /^2/.test(s));
      if (!success.length) problems.push(`${key}: no success response`);
      if (!isPublic && !responses['401']) problems.push(`${key}: no 401 response`);
      for (const [status, r] of Object.entries(responses)) {
        if (!/^[45]/.test(status)) continue;
        const ref = r.content?.['application/json']?.schema?.$ref;
        if (ref !== '#/components/schemas/ErrorEnvelope') problems.push(`${key}: ${status} does not use ErrorEnvelope`);
      }
      if (['post', 'put', 'patch'].includes(method) && op.requestBody === undefined && !/\/(apply|reject|pause|resume|abandon|reset|grant|deny|session-run)$/.test(key)) {
        // Action routes may have no body; anything else must say what it accepts.
        problems.push(`${key}: no request body schema`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('matches the committed TypeScript client types', () => {
    const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-types-')), 'openapi.d.ts');
    execFileSync(process.execPath, [path.join(root, 'node_modules/openapi-typescript/bin/cli.js'), path.join(root, 'schemas/openapi.json'), '-o', out], { stdio: 'pipe' });
    if (fs.readFileSync(out, 'utf8') !== committed('generated/openapi.d.ts')) throw new Error(`generated/openapi.d.ts is out of date: ${REGENERATE}`);
  });
});
