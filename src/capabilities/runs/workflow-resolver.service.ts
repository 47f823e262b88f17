import { Inject, Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { ArtifactRegistryService } from '../../platform/artifacts/artifact-registry.service';
import { NotFoundError } from '../../platform/errors/domain-error';
import type { TenantScope } from '../../platform/identity/principal';
import { McpClientService, PackDirectory, TOOL_SESSION_WORKFLOW } from '../tool-catalog';
import { MCP_CLIENT_FIXTURES, MCP_CONFORMANCE_FIXTURES, MCP_CONFORMANCE_SERVER } from './mcp-fixtures';
import { DeferredChain, expandDeferred } from './chain-deferred-parameters';
import { mintChildWorkflowId, withChildWorkflowIds } from './chain-subchains';
import { INTERRUPT_FIXTURES } from './interrupts/interrupt-fixtures';
import { WORKFLOW_FIXTURES } from './workflow-fixtures';
import { BUDGET_FIXTURES } from './budget/budget-fixtures';
import { DEAD_LETTER_FIXTURES } from './dead-letters/dead-letter-fixtures';
import { COMPENSATION_FIXTURES } from './compensation/compensation-fixtures';
import { REPLAY_FIXTURES } from './replay/replay-fixtures';
import { RUNS_SETTINGS, RunsSettings } from './runs.settings';
import { WorkflowDefinitionView, workflowDefinitionView } from './api/workflow-definition-view';

/** The artifact kind of installed workflow-chain packs (the tool catalog's installer writes it). */
const WORKFLOW_CHAIN_PACK = 'workflow-chain-pack';

/** The fixtures the official conformance scenarios start by workflowId (served only with the test seams on). */
export const CONFORMANCE_FIXTURES: Record<string, Record<string, unknown>> = {
  'conformance-noop': { nodes: [{ id: 'noop', typeId: 'core.noop', config: {} }] },
  // Runs for 30 s, so `configurable.runTimeoutMs: 1000` always breaches.
  'conformance-run-duration-breach': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 30_000 } }] },
  // `inputs.nonce` only varies the body (idempotency scenarios); it has no effect.
  'conformance-idempotent': { nodes: [{ id: 'noop', typeId: 'core.noop', config: { nonce: '{{inputs.nonce}}' } }] },
  // One node that stays running for `inputs.delayMs` (or `inputs.delaySeconds`): 1 s by default.
  'conformance-delay': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: '{{inputs.delayMs}}', seconds: '{{inputs.delaySeconds}}', defaultMs: 1000 } }] },
  // The same, cancellable mid-way (core.delay stops on cancel): 30 s by default.
  'conformance-cancellable': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: '{{inputs.delayMs}}', seconds: '{{inputs.delaySeconds}}', defaultMs: 30_000 } }] },
  // Always ends `failed` with a structured error.
  'conformance-failure': { nodes: [{ id: 'fail', typeId: 'core.fail', config: { code: 'conformance_failure', message: 'The conformance-failure fixture always fails.' } }] },
  // Three noop nodes a -> b -> c.
  'conformance-multi-node': {
    nodes: [
      { id: 'a', typeId: 'core.noop', config: { step: 'a' } },
      { id: 'b', typeId: 'core.noop', config: { step: 'b' } },
      { id: 'c', typeId: 'core.noop', config: { step: 'c' } },
    ],
    edges: [{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }],
  },
  // Interrupts: one suspending node each (approval gate `gate`, clarification `ask`, external event `wait`).
  'conformance-approval': { nodes: [{ id: 'gate', typeId: 'core.approval', config: { title: 'Conformance approval', requiredApprovals: 1 } }] },
  // RFC 0051 governance gates (the approval-gate seam): role-gated, with an override path; the second needs two grants and its override releases it at once.
  'conformance-governance-gate': { nodes: [{ id: 'gate', typeId: 'core.openwop.governance.approvalGate', config: { title: 'Conformance governance gate', requiredScope: 'approvals:respond', override: { requiredScope: 'approvals:respond' } } }] },
  'conformance-governance-gate-quorum': { nodes: [{ id: 'gate', typeId: 'core.openwop.governance.approvalGate', config: { title: 'Conformance governance gate (quorum 2)', requiredScope: 'approvals:respond', quorum: 2, override: { requiredScope: 'approvals:respond' }, overrideBypassesQuorum: true } }] },
  'conformance-clarification': {
    nodes: [{ id: 'ask', typeId: 'core.clarification', config: { title: 'Conformance clarification', questions: [{ id: 'q1', question: 'Which colour?' }] } }],
  },
  // RFC 0199 §D.2(d): clarifications whose answers MCP form mode must not carry, one nested (an
  // object answer), one sensitive (a writeOnly password): the MCP mount asks them in URL mode (a
  // host page) or answers isError, never form mode. Answered over REST or in the console like any other.
  'conformance-clarification-nested': {
    nodes: [
      {
        id: 'ask',
        typeId: 'core.clarification',
        config: {
          title: 'Conformance clarification (nested answer)',
          questions: [{ id: 'address', question: 'Where should it be shipped?', schema: { type: 'object', properties: { street: { type: 'string', minLength: 1 }, city: { type: 'string', minLength: 1 } }, required: ['street', 'city'], additionalProperties: false } }],
        },
      },
    ],
  },
  'conformance-clarification-sensitive': {
    nodes: [
      {
        id: 'ask',
        typeId: 'core.clarification',
        config: { title: 'Conformance clarification (sensitive answer)', questions: [{ id: 'pin', question: 'Which PIN unlocks the vault?', schema: { type: 'string', format: 'password', writeOnly: true, minLength: 4 } }] },
      },
    ],
  },
  'conformance-interrupt-external-event': {
    nodes: [{ id: 'wait', typeId: 'core.external-event', config: { eventType: 'conformance.order.status', correlation: { orderId: 'fixture-order-1', status: 'completed' } } }],
  },
  // Resolved only with a bearer holding approvals:respond (approval gates mint no signed token).
  'conformance-interrupt-auth-required': { nodes: [{ id: 'gate', typeId: 'core.approval', config: { title: 'Conformance auth-required approval', requiredApprovals: 1 } }] },
  // A clerk's gate: a credential holding approvals:respond records the votes of a named panel (the
  // scenario votes as approver-1..3 with one bearer); elsewhere that needs approvals:act-as.
  'conformance-interrupt-quorum': {
    nodes: [
      {
        id: 'gate',
        typeId: 'core.approval',
        config: { title: 'Conformance quorum approval', requiredApprovals: 3, rejectionPolicy: 'majority', namedVoters: { recordedBy: 'approvals:respond' } },
      },
    ],
  },
  // Sub-workflows and workflow variables (workflow-fixtures.ts).
  ...WORKFLOW_FIXTURES,
  // Interrupts and approvals beyond the v1 set (interrupts/interrupt-fixtures.ts).
  ...INTERRUPT_FIXTURES,
  // RFC 0084 budgets (budget/budget-fixtures.ts).
  ...BUDGET_FIXTURES,
  // RFC 0053 dead letters (dead-letters/dead-letter-fixtures.ts).
  ...DEAD_LETTER_FIXTURES,
  // RFC 0151 compensation (compensation/compensation-fixtures.ts).
  ...COMPENSATION_FIXTURES,
  // Replay: a looped side-effecting node (replay/replay-fixtures.ts).
  ...REPLAY_FIXTURES,
};

/**
 * The chains of the deferred-expand test seam (workflow-chain-deferred-parameters), as a chain pack would carry
 * them: `{{params.*}}` in a prompt body, one parameter sensitive in the second. The seam runs their deferred
 * expansion (chain-deferred-parameters.ts) with these author values.
 */
export const DEFERRED_SEAM_SOURCES: Record<string, { chain: DeferredChain; authorValues: Record<string, unknown> }> = {
  'conformance.deferred': {
    chain: {
      chainId: 'conformance.deferred',
      parameters: { type: 'object', required: ['topic'], properties: { topic: { type: 'string', description: 'What the note is about.' } } },
      dag: { nodes: [{ id: 'compose', typeId: 'core.noop', config: { systemPrompt: 'Write a short note about {{params.topic}}.' } }] },
    },
    authorValues: { topic: 'default-topic' },
  },
  'conformance.deferred-sensitive': {
    chain: {
      chainId: 'conformance.deferred-sensitive',
      parameters: { type: 'object', properties: { apiKey: { type: 'string', 'x-openwop-sensitive': true }, topic: { type: 'string' } } },
      dag: { nodes: [{ id: 'compose', typeId: 'core.noop', config: { systemPrompt: 'Use the key {{params.apiKey}} to look up {{params.topic}}.' } }] },
    },
    authorValues: { topic: 'billing' },
  },
};

/** The chain the safe-fetch-run test seam starts (seams/safe-fetch-seam.controller.ts). */
export const SAFE_FETCH_RUN_WORKFLOW = 'openwop.seam.safe-fetch-run';

/**
 * The one-node chains test seams run (served only with the test seams on, not advertised as fixtures): the
 * tool-session seam's `core.tool` node whose tool, arguments and call count are the run's inputs, and the
 * safe-fetch-run seam's `core.http.request` of the run's input URL, the deferred-expand seam's expanded chains.
 */
const SEAM_CHAINS: Record<string, Record<string, unknown>> = {
  [TOOL_SESSION_WORKFLOW]: {
    nodes: [{ id: 'session', typeId: 'core.tool', config: { toolId: '{{inputs.toolId}}', arguments: '{{inputs.arguments}}', calls: '{{inputs.calls}}' } }],
  },
  ...Object.fromEntries(Object.entries(DEFERRED_SEAM_SOURCES).map(([id, s]) => [id, expandDeferred(s.chain, s.authorValues).dag])),
  // The safe-fetch-run seam's chain: one ctx.http.safeFetch of the run's input URL, audited in the run's log.
  [SAFE_FETCH_RUN_WORKFLOW]: {
    nodes: [{ id: 'fetch', typeId: 'core.http.request', config: { url: '{{inputs.url}}' } }],
  },
};

/**
 * The chains every tenant has, whatever it installed: `openwop.call-tool` runs one tool of the
 * caller's catalog as a durable run (one `core.tool` node, authorized as the run's starter, under the
 * tenant's dispatch policy). The MCP mount calls catalog tools through it; `POST /v1/runs` may too.
 */
export const HOST_CHAINS: Record<string, Record<string, unknown>> = {
  'openwop.call-tool': {
    nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: '{{inputs.toolId}}', arguments: '{{inputs.arguments}}' } }],
  },
};
export const CALL_TOOL_CHAIN = 'openwop.call-tool';

export interface ResolvedChain {
  chainId: string;
  dag: Record<string, unknown>;
  label?: string;
  version?: string;
  description?: string;
  /** The workflow-chain pack that holds it (none for a fixture). */
  pack?: string;
  /** The JSON Schema of the run inputs the chain declares (its `parameters`), when it declares one. */
  parameters?: Record<string, unknown>;
}

/** The chains a scope (tenant, workspace) has installed, as read at a version of the tenant's catalog. */
interface CachedCatalog {
  version: string;
  /** The installed workflow-chain pack manifests, the workspace's own first. */
  manifests: Array<Record<string, unknown>>;
}

/** A chain found in the cache, with the catalog version it was read at (what the run insert checks). */
export interface CachedResolution {
  chain?: ResolvedChain;
  version: string;
}

/** Most scopes whose installed chains are kept (the oldest entry goes first). */
const MAX_CACHED_SCOPES = 10_000;

/**
 * The tenant's catalog version (migration 1764950000000: bumped by a trigger on every install,
 * update and removal of a workflow-chain pack, whatever path made it); 0 before its first chain.
 */
export const CHAIN_CATALOG_VERSION_SQL = (tenantParam: string) => `coalesce((SELECT "version" FROM "chain_catalog_version" WHERE "tenant" = ${tenantParam}::text), 0)`;

/**
 * Finds the DAG a `workflowId` names for a tenant: a chain (`chainId`, or the catalog's
 * `workflow:<chainId>`) of a workflow-chain pack installed for the tenant (an applied proposal or an
 * installed pack; the workspace's own packs first), then one of the host-wide pack folder, then a
 * conformance fixture (or the tool-session seam's chain) while the test seams are on.
 *
 * The installed packs of each scope are kept in memory with the tenant's catalog version they were
 * read at. `describe` checks that version first (one indexed read) and reads the packs again when it
 * moved; `cached` answers from memory without any read, for a caller that checks the version itself
 * in the statement that acts on the answer (the run insert does), so a chain uninstalled on any
 * replica is never run and one installed there is found at the next submission.
 */
@Injectable()
export class WorkflowResolver {
  private readonly cache = new Map<string, CachedCatalog>();

  constructor(
    private readonly ds: DataSource,
    private readonly registry: ArtifactRegistryService,
    private readonly directory: PackDirectory,
    @Inject(RUNS_SETTINGS) private readonly settings: RunsSettings,
    private readonly mcp: McpClientService,
  ) {}

  async resolve(scope: TenantScope, workflowId: string, manager?: EntityManager): Promise<Record<string, unknown> | undefined> {
    return (await this.describe(scope, workflowId, manager))?.dag;
  }

  /**
   * The chain a `workflowId` names with what its pack says about it (label, version, description),
   * found as `resolve` finds it; undefined when the tenant has no such chain. Current as of the
   * read of the tenant's catalog version.
   */
  async describe(scope: TenantScope, workflowId: string, manager?: EntityManager): Promise<ResolvedChain | undefined> {
    return (await this.current(scope, manager)).chain(workflowId);
  }

  /**
   * The WorkflowDefinition of a workflow installed for the caller's tenant; unknown, foreign and
   * non-executable ids are 404. The answer of `GET /v1/workflows/{workflowId}` and gRPC GetWorkflow.
   */
  async definition(scope: TenantScope, workflowId: string): Promise<WorkflowDefinitionView> {
    const chain = await this.describe(scope, workflowId);
    const view = chain && workflowDefinitionView(workflowId, chain);
    if (!view) throw new NotFoundError(`No workflow "${workflowId}" is installed for your tenant.`, { workflowId });
    return view;
  }

  /**
   * The scope's chains as the database has them now, with their version: one read of the version
   * while the cache is current, else the version and then the packs (read in that order: a change
   * in between leaves packs newer than their version, which the next check reads again).
   */
  async current(scope: TenantScope, manager?: EntityManager): Promise<{ version: string; chain: (workflowId: string) => ResolvedChain | undefined }> {
    const db = manager ?? this.ds.manager;
    const [{ version }] = (await db.query(`SELECT ${CHAIN_CATALOG_VERSION_SQL('$1')}::text AS "version"`, [scope.tenant])) as Array<{ version: string }>;
    const key = cacheKey(scope);
    let entry = this.cache.get(key);
    if (!entry || entry.version !== version) {
      const installed = await this.registry.list(scope, [WORKFLOW_CHAIN_PACK], manager);
      // A workspace's own pack outranks the tenant-wide one of the same chain.
      installed.sort((a, b) => Number(!!b.workspace) - Number(!!a.workspace));
      entry = { version, manifests: installed.map((a) => a.content) };
      this.remember(key, entry);
    }
    const manifests = entry.manifests;
    return { version, chain: (workflowId) => this.find(manifests, workflowId, scope.tenant) };
  }

  /**
   * Every chain the scope can run by id, found as `describe` finds each (the workspace's own first,
   * then the tenant's, then the host-wide pack folder): one per chainId, by chainId. Host chains and
   * conformance fixtures are not listed.
   */
  async list(scope: TenantScope, manager?: EntityManager): Promise<ResolvedChain[]> {
    await this.current(scope, manager);
    const entry = this.cache.get(cacheKey(scope));
    const manifests = [...(entry?.manifests ?? []), ...this.directory.workflowChainPacks.map((p) => p.content)];
    const ids = new Set<string>();
    for (const m of manifests) for (const c of Array.isArray(m.chains) ? (m.chains as Array<Record<string, unknown>>) : []) if (c && typeof c.chainId === 'string') ids.add(c.chainId);
    const out: ResolvedChain[] = [];
    for (const id of [...ids].sort()) {
      const chain = this.find(entry?.manifests ?? [], id, scope.tenant);
      if (chain) out.push(chain);
    }
    return out;
  }

  /** The chain as the cache has it (no read at all), or undefined when the scope's chains were never read. */
  cached(scope: TenantScope, workflowId: string): CachedResolution | undefined {
    const entry = this.cache.get(cacheKey(scope));
    if (!entry) return undefined;
    return { version: entry.version, chain: this.find(entry.manifests, workflowId, scope.tenant) };
  }

  /** Drops what is kept of a scope's chains (its version moved under a statement that checked it). */
  forget(scope: TenantScope): void {
    this.cache.delete(cacheKey(scope));
  }

  private remember(key: string, entry: CachedCatalog): void {
    this.cache.delete(key);
    this.cache.set(key, entry);
    if (this.cache.size > MAX_CACHED_SCOPES) this.cache.delete(this.cache.keys().next().value as string);
  }

  private find(installed: Array<Record<string, unknown>>, workflowId: string, tenant: string): ResolvedChain | undefined {
    // A host chain cannot be shadowed by a pack's chain of the same id.
    if (HOST_CHAINS[workflowId]) return { chainId: workflowId, dag: HOST_CHAINS[workflowId], description: 'Runs one tool of the caller\'s catalog (inputs.toolId, inputs.arguments).' };
    // The pack folder is read live: it is this process's own, loaded at start.
    const manifests = [...installed, ...this.directory.workflowChainPacks.map((p) => p.content)];
    const str = (v: unknown) => (typeof v === 'string' && v ? v : undefined);
    const chainsOf = (m: Record<string, unknown>) => (Array.isArray(m.chains) ? (m.chains as Array<Record<string, unknown>>) : []);
    const versionOf = (id: string) => {
      for (const m of manifests) for (const c of chainsOf(m)) if (c && c.chainId === id) return str(c.version) ?? str(m.version);
      return undefined;
    };
    // A co-registered sub-chain (RFC 0133, chain-subchains.ts): its tenant-scoped id names a chain of this tenant only.
    const child = workflowId.startsWith('wfc_') ? manifests.flatMap(chainsOf).find((c) => c && typeof c.chainId === 'string' && mintChildWorkflowId(tenant, c.chainId, versionOf(c.chainId) ?? '') === workflowId) : undefined;
    const chainId = child ? (child.chainId as string) : workflowId.startsWith('workflow:') ? workflowId.slice('workflow:'.length) : workflowId;
    for (const m of manifests) {
      const chain = chainsOf(m).find((c) => c && c.chainId === chainId);
      if (chain) {
        const parameters = chain.parameters && typeof chain.parameters === 'object' && !Array.isArray(chain.parameters) ? (chain.parameters as Record<string, unknown>) : undefined;
        const dag = withChildWorkflowIds(chain.dag as Record<string, unknown>, tenant, versionOf);
        return { chainId, dag, label: str(chain.label), version: str(chain.version) ?? str(m.version), description: str(chain.description), pack: str(m.name), ...(parameters ? { parameters } : {}) };
      }
    }
    if (this.settings.fixtures && CONFORMANCE_FIXTURES[workflowId]) return { chainId: workflowId, dag: CONFORMANCE_FIXTURES[workflowId], description: 'Conformance fixture (served while the test seams are on).' };
    if (this.settings.fixtures && SEAM_CHAINS[workflowId]) return { chainId: workflowId, dag: SEAM_CHAINS[workflowId] };
    if (this.mcpFixtures() && MCP_CONFORMANCE_FIXTURES[workflowId]) return { chainId: workflowId, dag: MCP_CONFORMANCE_FIXTURES[workflowId], description: 'Conformance fixture (served while the test seams are on).' };
    if (this.mcpFixtures() && MCP_CLIENT_FIXTURES[workflowId]) return { chainId: workflowId, dag: MCP_CLIENT_FIXTURES[workflowId], description: 'Conformance fixture (served while the test seams are on).' };
    return undefined;
  }

  fixtureIds(): string[] {
    if (!this.settings.fixtures) return [];
    return [...Object.keys(CONFORMANCE_FIXTURES), ...(this.mcpFixtures() ? Object.keys(MCP_CONFORMANCE_FIXTURES) : [])];
  }

  /** The `ctx.mcp` fixture's id while it is served (not in `fixtureIds`: advertised only with the v2 `mcp.client` facet). */
  mcpClientFixtureIds(): string[] {
    return this.mcpFixtures() ? Object.keys(MCP_CLIENT_FIXTURES) : [];
  }

  /** The MCP fixtures are served only with the MCP server they call configured. */
  private mcpFixtures(): boolean {
    return this.settings.fixtures && this.mcp.configured(MCP_CONFORMANCE_SERVER);
  }
}

function cacheKey(scope: TenantScope): string {
  return `${scope.tenant}\u0000${scope.workspace ?? ''}`;
}
