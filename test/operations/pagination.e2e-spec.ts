/**
 * Cursor pagination of every list route. The set of list routes comes from the OpenAPI document:
 * a new GET route that returns a collection fails this suite until it is paginated (and listed in
 * ROUTES below) or exempted with a reason.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ApprovalsService } from '../../src/capabilities/approvals/approvals.service';
import { installChains } from '../runs/run-kit';
import { WebhooksService } from '../../src/capabilities/webhooks/webhooks.service';
import { systemPrincipal } from '../../src/platform/identity/principal';
import { encodeCursor } from '../../src/platform/pagination/cursor';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { goalBody } from '../goals/goal-test-kit';
import { createTestApp, HttpResult, TestApp } from '../support/test-app';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const envelopeOk = (body: unknown) => expect(SchemaRegistry.shared().validate('error-envelope', body)).toEqual([]);
const FIXTURES = path.resolve(__dirname, '../fixtures/connection-packs');
const githubPack = (): Json => JSON.parse(fs.readFileSync(path.join(FIXTURES, 'connection-pack-github.json'), 'utf8'));
const rnd = () => randomBytes(3).toString('hex');
const TENANTS = ['acme', 'globex'] as const;
type Tenant = (typeof TENANTS)[number];

/** GET routes returning a collection that are deliberately not cursor-paginated, and why. */
const EXEMPT: Record<string, string> = {
  '/v1/tools': 'the protocol fixes the catalog as a bare ToolDescriptor array (RFC 0078)',
  '/v1/compact-tools': 'the RFC 0112 compact view of the same catalog, `{tools}` whole like the standard view',
  '/v1/export': 'one ExportBundle (RFC 0098): a bundle is imported whole (dependsOn spans it), so it is not a page',
  '/v1/host/sample/export': 'the conformance seam of /v1/export',
  '/.well-known/oauth-protected-resource/v1/host/openwop/mcp': 'one RFC 9728 metadata document (its arrays are lists of URLs and scopes, not a collection)',
  '/v1/runs/{runId}/events/poll': 'pages by the protocol’s own cursor, lastSequence (gap-free per stream)',
  '/v1/runs/{runId}/events': 'the event stream; its JSON read pages like the poll, by lastSequence / Last-Event-ID (at most 1000 events an answer)',
  '/v1/mcp/servers': 'the MCP servers the host configuration names: a bounded list of configuration, not tenant data that grows',
  '/v1/mcp/tool-pins': 'one pin per tool of the configured MCP servers: bounded by what those servers serve, read whole for review',
  '/v1/host/sample/test/runs/{runId}/events': 'the conformance seam returns a run’s whole event log as the suite expects',
  '/v1/connection-providers/{providerId}/consent-plan': 'one plan (its steps are the ordered consent steps of one provider), not a list',
  '/v1/whoami': 'the caller\'s own principal; its arrays are the credential\'s scopes and roles, not a list of resources',
  '/v1/runs/{runId}/definition': 'one chain (its nodes and edges are one workflow definition, drawn whole), not a list',
  '/v1/runs/{runId}:diff': 'one RunDiff of two runs (the protocol\'s run-diff shape: its divergences are one comparison, read whole), not a list',
  '/v1/workflows/{workflowId}': 'one WorkflowDefinition (its nodes, edges, triggers and variables are one workflow, read whole), not a list',
  '/v1/host/sample/identity/owned-run': 'the identity seam answers one run snapshot (its arrays belong to that run), not a list',
  '/v1/host/effect-seams': 'the effect-seam manifest: one row per kind of effect the host can suppress on replay, a fixed list of the host\'s own',
  '/v1/runs/{runId}/effects': 'one run\'s effect ledger, bounded by the run\'s node executions (limits.maxLoopIterations), read whole beside its snapshot',
  '/connection-providers': 'the RFC 0233 registry read: one entry per provider id the host and the tenant\'s packs claim, bounded by what is installed, read whole to resolve a provider',
  '/v1/webhooks/{webhookId}/dead-letters': 'cursor-paginated (limit, cursor, nextCursor); its items exist only once a delivery exhausted its retries, so it is exercised in test/webhooks/webhooks-v2.e2e-spec.ts',
  '/v1/runs/{runId}/debug-bundle': 'one run\'s debug bundle (debug-bundle.md): its events are that run\'s log, capped at 8 MB with an explicit truncation mark, not a list of resources',
  '/v1/dead-letters': 'cursor-paginated (limit, cursor, nextCursor); its items exist only once a run exhausted its retries, so it is exercised in test/runs/runs-dead-letters.e2e-spec.ts',
  '/v1/connections/{id}/oauth': 'at most two grants: the caller\'s own on the connection and the tenant\'s shared one',
  '/v1/runs/{runId}/interrupts/{nodeId}/connect': 'one authorization URL for a credential interrupt (its `scopes` are the provider scopes asked for), not a list',
  '/v1/oauth/callback': 'the OAuth redirect back: one grant (its array is the grant\'s scopes), not a list',
  '/v1/audit/verify': 'one AuditVerifyResult (the protocol fixes its shape, closed); its range is fromSeq/toSeq, its checkpoints and anomalies are the verdict over that range',
};

interface Ctx {
  tenant: Tenant;
  token: string;
  goalId: string;
  connectionProvider: string;
  webhookId: string;
}

interface ListRoute {
  path: string;
  /** The concrete URL for a tenant (path parameters filled in). */
  url(c: Ctx): string;
  itemsKey: string;
  idOf(item: Json): string;
  /** Adds one item for the tenant and returns its id. */
  seed(c: Ctx, i: number): Promise<string>;
}

describe('cursor pagination of every list route', () => {
  let t: TestApp;
  const ctx = {} as Record<Tenant, Ctx>;

  const ok = async (res: Promise<HttpResult>, status = [200, 201]): Promise<Json> => {
    const r = await res;
    if (!status.includes(r.status)) throw new Error(`seeding failed: ${r.status} ${r.text}`);
    return r.body;
  };
  const post = (c: Ctx, url: string, body: unknown) => ok(t.http('POST', url, { token: c.token, body }));
  const proposeAndApply = async (c: Ctx, kind: string, artifact: Json) => {
    const p = await post(c, '/v1/proposals', { kind, artifact, provenance: { sourceRunIds: [] } });
    await post(c, `/v1/proposals/${p.id}/apply`, {});
  };
  const installPack = async (c: Ctx, providerId: string) => {
    const m = githubPack();
    m.name = `private.${c.tenant}.pack-${providerId}`;
    m.provider.id = providerId;
    await post(c, '/v1/connection-packs', m);
    return m.name as string;
  };

  const ROUTES: ListRoute[] = [
    {
      path: '/v1/workflows',
      url: () => '/v1/workflows',
      itemsKey: 'workflows',
      idOf: (w) => w.workflowId,
      // One chain pack per workflow, installed for the tenant the way a publish installs it.
      seed: async (c, i) => {
        const id = `vendor.page.w${i}-${rnd()}`;
        await installChains(t, c.tenant, `vendor.page.pack-${i}-${rnd()}`, { [id]: { nodes: [{ id: 'n', typeId: 'core.noop', config: {} }] } });
        return id;
      },
    },
    {
      path: '/v1/keys',
      url: () => '/v1/keys',
      itemsKey: 'keys',
      idOf: (k) => k.id,
      seed: async (c, i) => (await post(c, '/v1/keys', { principal: `p${i}-${rnd()}`, scopes: ['goals:read'] })).apiKey.id,
    },
    {
      path: '/v1/goals',
      url: () => '/v1/goals',
      itemsKey: 'goals',
      idOf: (g) => g.id,
      seed: async (c) => (await post(c, '/v1/goals', goalBody({ continuation: { mode: 'manual' }, schedule: undefined }))).id,
    },
    {
      path: '/v1/host/sample/goals',
      url: () => '/v1/host/sample/goals',
      itemsKey: 'goals',
      idOf: (g) => g.id,
      seed: async (c) => (await post(c, '/v1/goals', goalBody({ continuation: { mode: 'manual' }, schedule: undefined }))).id,
    },
    {
      path: '/v1/goals/{id}/runs',
      url: (c) => `/v1/goals/${c.goalId}/runs`,
      itemsKey: 'runs',
      idOf: (r) => r.runId,
      seed: async (c, i) => {
        const runId = `run-${i}-${rnd()}`;
        await ok(t.http('POST', `/v1/goals/${c.goalId}/runs`, { token: c.token, body: { runId, output: { green: false } } }), [200]);
        return runId;
      },
    },
    {
      path: '/v1/proposals',
      url: () => '/v1/proposals',
      itemsKey: 'proposals',
      idOf: (p) => p.id,
      seed: async (c, i) => (await post(c, '/v1/proposals', { kind: 'automation', artifact: { name: `draft-${i}-${rnd()}` }, provenance: { sourceRunIds: [] } })).id,
    },
    {
      path: '/v1/host/sample/proposals',
      url: () => '/v1/host/sample/proposals',
      itemsKey: 'proposals',
      idOf: (p) => p.id,
      seed: async (c, i) => (await post(c, '/v1/proposals', { kind: 'automation', artifact: { name: `draft-${i}-${rnd()}` }, provenance: { sourceRunIds: [] } })).id,
    },
    {
      path: '/v1/approvals',
      url: () => '/v1/approvals',
      itemsKey: 'approvals',
      idOf: (a) => a.id,
      // Gates open when a proposal is applied in approval-gate mode; the service opens them the same way.
      seed: (c, i) =>
        t.ds.transaction(async (m) => {
          const gate = await t.app.get(ApprovalsService).open(
            m,
            { subjectKind: 'proposal', subjectId: randomUUID(), tenant: c.tenant, workspaceKey: '', artifactRef: `sha256:${'0'.repeat(64)}`, artifactType: 'automation', title: 'gate' },
            systemPrincipal(c.tenant),
          );
          return gate.id;
        }),
    },
    {
      path: '/v1/automations',
      url: () => '/v1/automations',
      itemsKey: 'automations',
      idOf: (a) => a.name,
      seed: async (c, i) => {
        const name = `auto-${i}-${rnd()}`;
        await proposeAndApply(c, 'automation', { name, schedule: { intervalMs: 3_600_000 }, action: { type: 'start-run', workflowId: 'reports.nightly', inputs: {} } });
        return name;
      },
    },
    {
      path: '/v1/runs',
      url: () => '/v1/runs',
      itemsKey: 'runs',
      idOf: (r) => r.runId,
      // The seam-gated built-in chain: one core.noop node.
      seed: async (c) => (await post(c, '/v1/runs', { workflowId: 'conformance-noop' })).runId,
    },
    {
      path: '/v1/prompt-templates',
      url: () => '/v1/prompt-templates',
      itemsKey: 'templates',
      idOf: (x) => x.template.templateId,
      seed: async (c, i) => {
        const templateId = `tpl.n${i}x${rnd()}`;
        await proposeAndApply(c, 'prompt-template', { templateId, version: '1.0.0', kind: 'system', text: 'hi' });
        return templateId;
      },
    },
    {
      path: '/v1/connection-packs',
      url: () => '/v1/connection-packs',
      itemsKey: 'packs',
      idOf: (p) => p.name,
      seed: (c, i) => installPack(c, `prov-${i}-${rnd()}`),
    },
    {
      path: '/v1/installed-packs',
      url: () => '/v1/installed-packs',
      itemsKey: 'packs',
      idOf: (p) => p.id,
      seed: async (c, i) => {
        const name = `private.${c.tenant}.chains-${i}x${rnd()}`;
        const pack = {
          name,
          version: '1.0.0',
          kind: 'workflow-chain',
          engines: { openwop: '^1.0.0' },
          chains: [{ chainId: `${name}.c`, version: '1.0.0', label: 'c', description: 'c', parameters: { type: 'object' }, dag: { nodes: [{ id: 'n', typeId: 'core.noop' }] } }],
        };
        return (await post(c, '/v1/installed-packs', pack)).pack.id;
      },
    },
    {
      path: '/v1/connection-providers',
      url: () => '/v1/connection-providers',
      itemsKey: 'providers',
      idOf: (p) => p.providerId,
      seed: async (c, i) => {
        const id = `prov-${i}-${rnd()}`;
        await installPack(c, id);
        return id;
      },
    },
    {
      path: '/v1/connections',
      url: () => '/v1/connections',
      itemsKey: 'connections',
      idOf: (x) => x.id,
      seed: async (c, i) => (await post(c, '/v1/connections', { provider: c.connectionProvider, name: `conn-${i}-${rnd()}`, credential: `sk-${rnd()}` })).id,
    },
    {
      path: '/v1/host/workspace/files',
      url: () => '/v1/host/workspace/files',
      itemsKey: 'files',
      idOf: (f) => f.path,
      seed: async (c, i) => {
        const file = `page/${i}-${rnd()}.md`;
        await ok(t.http('PUT', `/v1/host/workspace/files/${file}`, { token: c.token, body: { content: 'x' } }), [200]);
        return file;
      },
    },
    {
      path: '/v1/webhooks',
      url: () => '/v1/webhooks',
      itemsKey: 'webhooks',
      idOf: (w) => w.webhookId,
      seed: async (c, i) => (await post(c, '/v1/webhooks', { url: `https://hooks.example.test/${c.tenant}/${i}-${rnd()}`, events: ['run.paused'] })).webhookId,
    },
    {
      path: '/v1/webhooks/{webhookId}/deliveries',
      url: (c) => `/v1/webhooks/${c.webhookId}/deliveries`,
      itemsKey: 'deliveries',
      idOf: (d) => d.deliveryId,
      // A finished delivery, as the dispatcher leaves one (a failed one is never picked up again).
      seed: async (c, i) => {
        const [row] = await t.ds.query(
          `INSERT INTO "webhook_delivery" ("tenant", "webhook_id", "event_id", "run_id", "sequence", "event_type", "status", "attempts")
           VALUES ($1, $2, gen_random_uuid(), $3, $4, 'run.completed', 'failed', 1) RETURNING "id"`,
          [c.tenant, c.webhookId, randomUUID(), i + 1],
        );
        return row.id as string;
      },
    },
  ];

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_CREDENTIAL_KEYS: `k1:${randomBytes(32).toString('base64')}` } });
    // Webhook URLs resolve to a public address without the network's DNS; nothing is ever sent there (no run here pauses).
    t.app.get(WebhooksService).resolver = async () => [{ address: '93.184.215.14', family: 4 }];
    for (const tenant of TENANTS) {
      const token = await t.key({ tenant, principal: 'owner', roles: ['admin'] });
      const c: Ctx = { tenant, token, goalId: '', connectionProvider: `conn-prov-${tenant}`, webhookId: '' };
      c.goalId = (await post(c, '/v1/goals', goalBody({ continuation: { mode: 'manual' }, schedule: undefined, bounds: { maxLoopIterations: 100 } }))).id;
      await installPack(c, c.connectionProvider);
      c.webhookId = (await post(c, '/v1/webhooks', { url: `https://hooks.example.test/${tenant}/history`, events: ['run.paused'] })).webhookId;
      ctx[tenant] = c;
    }
  });
  afterAll(() => t.close());

  it('covers every GET route of the OpenAPI document that returns a collection', async () => {
    const doc = (await t.http('GET', '/v1/openapi.json')).body as Json;
    const resolve = (s: Json | undefined): Json | undefined => (s?.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s);
    const collections: string[] = [];
    for (const [p, ops] of Object.entries(doc.paths as Json)) {
      const op = (ops as Json).get;
      if (!op || /\}$/.test(p)) continue;
      const schema = resolve(op.responses?.['200']?.content?.['application/json']?.schema);
      if (!schema) continue;
      const variants: Json[] = schema.oneOf ?? [schema];
      const isCollection = variants.some((v) => v.type === 'array' || Object.values((resolve(v)?.properties ?? {}) as Json).some((prop) => resolve(prop)?.type === 'array'));
      if (isCollection) collections.push(p);
    }
    const covered = new Set(ROUTES.map((r) => r.path));
    expect(collections.filter((p) => !covered.has(p) && !EXEMPT[p])).toEqual([]);
    // Every paginated route documents limit, cursor and nextCursor.
    for (const r of ROUTES) {
      const op = doc.paths[r.path].get;
      expect(op.parameters.filter((x: Json) => x.in === 'query').map((x: Json) => x.name)).toEqual(expect.arrayContaining(['limit', 'cursor']));
      const schema = resolve(op.responses['200'].content['application/json'].schema)!;
      expect(schema.required).toEqual(expect.arrayContaining([r.itemsKey, 'nextCursor']));
      expect(schema.properties.nextCursor.type).toEqual(['string', 'null']);
    }
    expect(collections.filter((p) => covered.has(p)).sort()).toEqual([...covered].sort());
  });

  const pageThrough = async (c: Ctx, route: ListRoute, limit: number, between?: (pageNo: number) => Promise<void>) => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q = new URLSearchParams({ limit: String(limit), ...(cursor ? { cursor } : {}) });
      const res = await t.http('GET', `${route.url(c)}?${q}`, { token: c.token });
      expect(res.status).toBe(200);
      const items = res.body[route.itemsKey] as Json[];
      expect(items.length).toBeLessThanOrEqual(limit);
      expect(Object.keys(res.body)).toEqual(expect.arrayContaining([route.itemsKey, 'nextCursor']));
      seen.push(...items.map(route.idOf));
      cursor = res.body.nextCursor;
      if (cursor !== null) {
        expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(items).toHaveLength(limit);
      }
      pages++;
      if (between) await between(pages);
    } while (cursor !== null && pages < 100);
    expect(cursor).toBeNull();
    return seen;
  };

  describe.each(ROUTES.map((r) => [r.path, r] as const))('%s', (_path, route) => {
    const seeded: Record<Tenant, string[]> = { acme: [], globex: [] };

    beforeAll(async () => {
      for (const tenant of TENANTS) for (let i = 0; i < 5; i++) seeded[tenant].push(await route.seed(ctx[tenant], i));
    });

    it('serves pages that together are exactly the whole list, in order, each tenant only its own', async () => {
      for (const tenant of TENANTS) {
        const c = ctx[tenant];
        const whole = await t.http('GET', `${route.url(c)}?limit=500`, { token: c.token });
        expect(whole.status).toBe(200);
        expect(whole.body.nextCursor).toBeNull();
        const all = (whole.body[route.itemsKey] as Json[]).map(route.idOf);
        expect(all).toEqual(expect.arrayContaining(seeded[tenant]));
        const other = seeded[tenant === 'acme' ? 'globex' : 'acme'];
        expect(all.filter((id) => other.includes(id))).toEqual([]);
        expect(await pageThrough(c, route, 2)).toEqual(all);
        expect(await pageThrough(c, route, 1)).toEqual(all);
        // Without a limit: the default page size (100) holds them all.
        const dflt = await t.http('GET', route.url(c), { token: c.token });
        expect((dflt.body[route.itemsKey] as Json[]).map(route.idOf)).toEqual(all);
      }
    });

    it('stays stable when items are added between pages: no repeats, nothing that existed is skipped', async () => {
      const c = ctx.acme;
      const before = ((await t.http('GET', `${route.url(c)}?limit=500`, { token: c.token })).body[route.itemsKey] as Json[]).map(route.idOf);
      const added: string[] = [];
      const seen = await pageThrough(c, route, 2, async (page) => {
        if (page <= 2) {
          const id = await route.seed(c, 100 + page);
          added.push(id);
          seeded.acme.push(id);
        }
      });
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen.filter((id) => !added.includes(id))).toEqual(before);
      // Whatever was added appears at most once, and only where it sorts after the pages already read.
      expect(seen.filter((id) => added.includes(id)).length).toBeLessThanOrEqual(added.length);
    });

    it('refuses another tenant’s cursor, a malformed cursor and a bad limit with 400 validation_error', async () => {
      const a = ctx.acme;
      const b = ctx.globex;
      const bPage = await t.http('GET', `${route.url(b)}?limit=1`, { token: b.token });
      const bCursor = bPage.body.nextCursor as string;
      expect(bCursor).toEqual(expect.any(String));
      const bad: Array<[string, string]> = [
        ['cursor', bCursor],
        ['cursor', 'not+base64/url=='],
        ['cursor', 'e30'],
        ['cursor', Buffer.from('{"v":1,"b":"x","k":[]}').toString('base64url')],
        ['cursor', 'A'.repeat(5000)],
        ['limit', '0'],
        ['limit', '501'],
        ['limit', '-1'],
        ['limit', '1.5'],
        ['limit', 'ten'],
        ['limit', ''],
      ];
      for (const [name, value] of bad) {
        const res = await t.http('GET', `${route.url(a)}?${new URLSearchParams({ [name]: value })}`, { token: a.token });
        expect([name, value.slice(0, 40), res.status]).toEqual([name, value.slice(0, 40), 400]);
        expect(res.body.error).toBe('validation_error');
        envelopeOk(res.body);
        // The refusal tells nothing of the other tenant's rows.
        for (const id of seeded.globex) expect(res.text).not.toContain(id);
      }
      const twice = await t.http('GET', `${route.url(a)}?limit=1&limit=2`, { token: a.token });
      expect(twice.status).toBe(400);
    });
  });

  it('binds a cursor to its list and its filters', async () => {
    const c = ctx.acme;
    const drafts = await t.http('GET', '/v1/proposals?state=draft&limit=1', { token: c.token });
    const cursor = drafts.body.nextCursor as string;
    expect((await t.http('GET', `/v1/proposals?state=draft&limit=1&cursor=${cursor}`, { token: c.token })).status).toBe(200);
    // The seam serves the same list: the cursor is valid on both paths.
    expect((await t.http('GET', `/v1/host/sample/proposals?state=draft&limit=1&cursor=${cursor}`, { token: c.token })).status).toBe(200);
    for (const url of [`/v1/proposals?state=applied&cursor=${cursor}`, `/v1/proposals?cursor=${cursor}`, `/v1/proposals?state=draft&kind=automation&cursor=${cursor}`, `/v1/goals?cursor=${cursor}`]) {
      const res = await t.http('GET', url, { token: c.token });
      expect([url, res.status]).toEqual([url, 400]);
    }
    // A cursor of one goal's runs does not page another goal's runs.
    const other = await post(c, '/v1/goals', goalBody({ continuation: { mode: 'manual' }, schedule: undefined }));
    const runsCursor = (await t.http('GET', `/v1/goals/${c.goalId}/runs?limit=1`, { token: c.token })).body.nextCursor as string;
    expect((await t.http('GET', `/v1/goals/${other.id}/runs?cursor=${runsCursor}`, { token: c.token })).status).toBe(400);
  });

  it('is typed in the generated client: limit and cursor in, nextCursor out', async () => {
    const c = ctx.acme;
    for (let i = 0; i < 3; i++) await post(c, '/v1/connections', { provider: c.connectionProvider, name: `typed-${i}-${rnd()}`, credential: `sk-${rnd()}` });
    const api = t.api(c.token);
    const first = await api.GET('/v1/connections', { params: { query: { limit: 2 } } });
    expect(first.data!.connections).toHaveLength(2);
    const cursor: string | null = first.data!.nextCursor;
    const second = await api.GET('/v1/connections', { params: { query: { limit: 2, cursor: cursor! } } });
    expect(second.data!.connections.map((c) => c.id)).not.toContain(first.data!.connections[0].id);
    const refused = await api.GET('/v1/connections', { params: { query: { limit: 0 } } });
    expect(refused.error).toMatchObject({ error: 'validation_error' });
  });

  it('answers a forged cursor with an impossible position with 400, never a database error', async () => {
    const binding = { list: 'goals', tenant: 'acme' };
    for (const key of [['2026-02-30T00:00:00.000000Z', '00000000-0000-4000-8000-000000000000'], ['2026-01-01T00:00:00.000000Z', 'not-a-uuid'], ['yesterday', '00000000-0000-4000-8000-000000000000'], ['2026-01-01T00:00:00.000000Z']]) {
      const res = await t.http('GET', `/v1/goals?cursor=${encodeCursor(binding, key)}`, { token: ctx.acme.token });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    // A well-formed position past every row is simply an empty last page.
    const past = await t.http('GET', `/v1/goals?cursor=${encodeCursor(binding, ['1970-01-01T00:00:00.000000Z', '00000000-0000-4000-8000-000000000000'])}`, { token: ctx.acme.token });
    expect(past.status).toBe(200);
    expect(past.body).toEqual({ goals: [], nextCursor: null });
  });
});
