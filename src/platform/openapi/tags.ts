/**
 * The description of every tag an operation may carry (`@ApiTags(...)`), written into the document's
 * global `tags`. A route with a tag missing here fails the OpenAPI test: add one line for it.
 * Only the tags some mounted operation uses are written.
 */
export const OPENAPI_TAGS: Record<string, string> = {
  approvals: 'Approval gates (RFC 0051): where a run step (`core.approval`, a tool call that needs approval, a clarification, an external event) or a proposal (RFC 0096 approval-gate activation) waits for people: list, read, grant and deny them (resolving a run step’s interrupt with a value is under `interrupts`).',
  artifacts: 'Run-produced artifacts.',
  audit: 'The tamper-evident audit log (openwop-audit-log-integrity): verify the caller tenant\'s hash chain and its signed checkpoints.',
  connections: 'Connection packs and connections (RFC 0095): providers, consent plans, egress checks and encrypted credentials (never returned).',
  goals: 'Standing goals (RFC 0097): bounded continuation judged by the declared completion check.',
  identity: 'The authenticated caller: tenant, workspace, principal and expanded scopes.',
  interrupts: 'Human-in-the-loop interrupts: the points where a run waits for a person, and their resolution.',
  keys: 'API keys of the caller’s tenant (or workspace): mint (the secret is shown once), list and revoke.',
  mcp: 'The host as an MCP server (streamable HTTP, MCP 2026-07-28 and 2025-06-18): the caller\'s governed tools and exposed workflows, each call a durable run; and its OAuth protected-resource metadata (RFC 9728).',
  operations: 'Operating the host: Prometheus metrics and the like.',
  packs: 'Node packs: the packages of node types that workflows can use on this host.',
  portability: 'Portability (RFC 0098): export the caller’s estate as a secret-free bundle and import one, all or nothing.',
  proposals: 'Reviewable learning (RFC 0096): inert proposals, their review, and what applying them installed (automations, prompt templates).',
  runs: 'Runs of workflow chains: create (idempotent), read, list, cancel and control them, and read their event log (SSE stream and long-poll).',
  'test-seams': 'Conformance test seams under /v1/host/sample/*: mounted only when OPENWOP_TEST_SEAMS=true, never in production.',
  tools: 'The tool catalog (RFC 0078): the authorization-scoped ToolDescriptor projection across every tool source, and its compact view (RFC 0112).',
  webhooks: 'Webhook subscriptions: run events delivered to an outbound HTTP endpoint.',
  workspace: 'The agent workspace (RFC 0059): a versioned file store per tenant·workspace for an agent\'s ground-truth files (identity, directives, memory index), written with optimistic concurrency (If-Match).',
  workflows: 'Workflow definitions: the chains a caller may run (GET /v1/workflows/{workflowId}), as the protocol\'s WorkflowDefinition.',
};
