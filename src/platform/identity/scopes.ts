/**
 * The one table of scopes the host defines and the roles that bundle them. Keys may also carry free
 * scopes (a tool can require `tools:fs:read`); one scope never implies another.
 */
export const HOST_SCOPES = {
  'runs:read': 'Read runs and their event logs (including the host event stream).',
  'runs:create': 'Start runs.',
  'runs:cancel': 'Cancel runs (does not imply runs:read).',
  'runs:compensate': "Act as operator on a run's compensation plan: retry, skip with justification or terminate a held unwind (RFC 0151).",
  'manifest:read': 'Read installed workflow definitions (GET /v1/workflows/{workflowId}).',
  'artifacts:read': 'Read the artifacts runs produce.',
  'tools:read': 'Read the tool catalog.',
  'tools:manage': 'See the MCP servers\' negotiated revisions and the pinned MCP tool definitions; approve a changed definition the catalog holds back (tenant-level credentials only).',
  'connections:read': 'Read connection packs and connections (never credentials).',
  'connections:manage': 'Install or remove connection packs; create, rotate and delete connections.',
  'proposals:read': 'List and read proposals.',
  'proposals:propose': 'Submit proposals (external synthesizers).',
  'proposals:review': 'Revise, reject or archive proposals.',
  'packs:publish': 'Activate proposals (install their artifacts) and install packs.',
  'approvals:respond': 'Grant or deny approval gates.',
  'approvals:act-as':
    'Record an approval vote for a named voter other than the own principal (a clerk recording a panel). In no role: an operator grants it to a key explicitly.',
  'goals:read': 'List and read standing goals.',
  'goals:write': 'Create, update, pause, resume and abandon goals; report contributing runs.',
  'portability:export': 'Export the tenant estate as a bundle.',
  'portability:import': 'Plan and apply bundle imports.',
  'webhooks:read': 'List and read webhook subscriptions (never their secrets) and their delivery history.',
  'webhooks:manage': 'Register and unregister webhook subscriptions (sends run events to the registered URL).',
  'workspace:read': 'List and read the agent workspace files of the own tenant·workspace (RFC 0059).',
  'workspace:write': 'Create, replace and delete agent workspace files of the own tenant·workspace (RFC 0059); does not imply workspace:read.',
  'keys:manage': 'Create, list, rotate and revoke API keys of the own tenant.',
  'audit:read': 'Verify the tenant\'s tamper-evident audit log (GET /v1/audit/verify); tenant-level credentials only.',
  'metrics:read': 'Read the Prometheus metrics of the host (GET /metrics, when OPENWOP_METRICS=scope). Host-wide, not tenant-scoped.',
} as const;

export type HostScope = keyof typeof HOST_SCOPES;

/** Changes tenant-wide connection state (packs, connections): only tenant-level credentials may use it. */
export const MANAGE_CONNECTIONS_SCOPE = 'connections:manage';

export const ALL_HOST_SCOPES = Object.keys(HOST_SCOPES) as HostScope[];

/** The scope that lets a credential record approval votes for voters other than itself (acting-as). */
export const ACT_AS_SCOPE = 'approvals:act-as';

/**
 * Scopes no role bundles, an operator's explicit grants only: the host-wide metrics, and acting-as,
 * which would let one credential count as several approvers.
 */
const UNBUNDLED_SCOPES: ReadonlySet<string> = new Set(['metrics:read', ACT_AS_SCOPE]);

export const ROLES: Record<string, { description: string; scopes: readonly string[] }> = {
  viewer: {
    description: 'Reads everything the tenant holds.',
    scopes: ['runs:read', 'manifest:read', 'artifacts:read', 'tools:read', 'connections:read', 'proposals:read', 'goals:read', 'webhooks:read', 'workspace:read'],
  },
  editor: {
    description: 'A viewer who also creates work: runs, goals, proposals, reviews and imports.',
    scopes: [
      'runs:read', 'runs:create', 'runs:cancel', 'manifest:read', 'artifacts:read', 'tools:read', 'connections:read', 'proposals:read', 'proposals:propose',
      'proposals:review', 'goals:read', 'goals:write', 'portability:export', 'portability:import', 'webhooks:read', 'workspace:read', 'workspace:write',
    ],
  },
  admin: { description: 'Every tenant scope the host defines (not the host-wide metrics:read, nor approvals:act-as).', scopes: ALL_HOST_SCOPES.filter((s) => !UNBUNDLED_SCOPES.has(s)) },
  // Host-wide observability is an operator's grant, never part of a tenant role.
  monitor: { description: 'Reads the host-wide Prometheus metrics (metrics:read) and nothing of any tenant.', scopes: ['metrics:read'] },
};

/**
 * The definition of a role, looked up among the table's own keys only: `constructor`, `__proto__`,
 * `toString` and other names an object inherits are unknown roles, not functions.
 */
export function roleOf(name: string): { description: string; scopes: readonly string[] } | undefined {
  return typeof name === 'string' && Object.prototype.hasOwnProperty.call(ROLES, name) ? ROLES[name] : undefined;
}

export function expandRoles(roles: readonly string[]): string[] {
  const out = new Set<string>();
  for (const role of roles) {
    const def = roleOf(role);
    // Fail closed: an unknown role grants nothing.
    if (def) for (const s of def.scopes) out.add(s);
  }
  return [...out];
}

const SCOPE_PATTERN = /^[a-z][a-z0-9._-]*(:[a-z0-9._*-]+)+$/;

export function isValidScope(scope: string): boolean {
  return SCOPE_PATTERN.test(scope);
}
