/** The conformance test seams: a loud warning at start whenever they are on, and no seam takes a tenant, workspace or principal from the request. */
import { generateOpenApiDocument } from '../../src/openapi-generate';
import { createTestApp } from '../support/test-app';

const WARNING = /test seams are enabled.*never.*production/i;

type Schema = { $ref?: string; properties?: Record<string, unknown>; allOf?: Schema[]; oneOf?: Schema[]; anyOf?: Schema[] };
type Operation = { 'x-test-seam'?: boolean; parameters?: Array<{ name: string; in: string }>; requestBody?: { content?: Record<string, { schema?: Schema }> } };

/** Names a request may not use to choose whose data a seam acts on: the credential says that. */
const IDENTITY = /^(tenant|workspace|principal|owner|subject)(id)?$/i;

/**
 * The exceptions: the webhook surface seam's body names a `tenantId` because the official
 * webhook-tenant-isolation scenario sends one; it is the caller's own tenant or names a sandbox
 * tenant of the caller's (`<caller>/seam/<name>`), never another real tenant
 * (test/webhooks/webhooks-registration.e2e-spec.ts). The authorization decision seam names the
 * principal a decision is FOR, of the caller's tenant: it acts as the caller, reads that
 * principal's grants and writes nothing but the audit entry (test/platform/identity-seams.e2e-spec.ts);
 * the approval-gate seam names a principal of the caller's tenant that the gate must refuse: one the
 * gate would accept is refused before anything is tried (test/runs/governance-gate.e2e-spec.ts). The
 * compensation operator seam names the actor of an operator action: it acts only on a run of the caller's, and
 * an actor of another tenant is decided against the plan's tenant for real (404), never acted for there
 * (test/runs/runs-compensation.e2e-spec.ts).
 */
const CHECKED_AGAINST_THE_CALLER = [
  'POST /v1/host/sample/authorization/decide body.principal',
  'POST /v1/host/sample/governance/approval-gate body.principal',
  'POST /v1/host/sample/test/compensation/operator body.principalId',
  'POST /v1/host/sample/test/compensation/operator body.tenantId',
  'POST /v1/host/sample/test/surface body.tenantId',
];

function properties(schema: Schema | undefined, components: Record<string, Schema>, seen = new Set<string>()): string[] {
  if (!schema) return [];
  if (schema.$ref) {
    const name = schema.$ref.split('/').pop()!;
    if (seen.has(name)) return [];
    seen.add(name);
    return properties(components[name], components, seen);
  }
  return [
    ...Object.keys(schema.properties ?? {}),
    // A nested object names whose data a seam acts on just as well (the compensation operator seam's `actor`).
    ...Object.values(schema.properties ?? {}).flatMap((p) => properties(p as Schema, components, seen)),
    ...[...(schema.allOf ?? []), ...(schema.oneOf ?? []), ...(schema.anyOf ?? [])].flatMap((s) => properties(s, components, seen)),
  ];
}

describe('test seams', () => {
  it('a host with the seams on logs a loud warning at start; one without them does not', async () => {
    const on = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    const off = await createTestApp();
    try {
      const warnings = (logs: string[]) => logs.map((l) => JSON.parse(l) as { level: string; msg: string }).filter((l) => WARNING.test(l.msg));
      const seen = warnings(on.logs);
      expect(seen).toHaveLength(1);
      expect(seen[0].level).toBe('warn');
      expect(seen[0].msg).toMatch(/OPENWOP_TEST_SEAMS=true/);
      expect(warnings(off.logs)).toEqual([]);
    } finally {
      await on.close();
      await off.close();
    }
  });

  it('no seam takes a tenant, workspace or principal from its body or query (the credential decides whose data it acts on)', async () => {
    const doc = (await generateOpenApiDocument({ testSeams: true })) as { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };
    const seams = Object.entries(doc.paths).flatMap(([p, ops]) => Object.entries(ops).filter(([, op]) => op['x-test-seam']).map(([m, op]) => ({ key: `${m.toUpperCase()} ${p}`, op })));
    expect(seams.length).toBeGreaterThan(20);
    const named = seams.flatMap(({ key, op }) => [
      ...(op.parameters ?? []).filter((q) => q.in === 'query' && IDENTITY.test(q.name)).map((q) => `${key} query.${q.name}`),
      ...Object.values(op.requestBody?.content ?? {}).flatMap((c) => properties(c.schema, doc.components.schemas)).filter((n) => IDENTITY.test(n)).map((n) => `${key} body.${n}`),
    ]);
    expect([...new Set(named)].sort()).toEqual(CHECKED_AGAINST_THE_CALLER);
  });
});
