import { AUTH_RECORD } from './auth';
import { CONNECTIONS_RECORD } from './connections';
import { IDEMPOTENCY_RECORD } from './idempotency';
import { INTERRUPT_RECORD } from './interrupt';
import { MCP_RECORD } from './mcp';
import { MULTI_AGENT_RECORD } from './multi-agent';
import { OAUTH_RECORD } from './oauth';
import { REPLAY_RECORD } from './replay';
import { RUN_LIST_RECORD } from './run-list';
import { TOOL_CATALOG_RECORD } from './tool-catalog';
import type { V2FamilyRecord } from './types';
import { WEBHOOKS_RECORD } from './webhooks';
import { WORKFLOW_CHAIN_PACKS_RECORD } from './workflow-chain-packs';

export type { V2Context, V2FamilyRecord } from './types';

/**
 * The v2 family records this host serves, one file per family (docs/versions.md, "Adding a v2
 * family"). The v2 root lists a family's record when it returns one; `V2_FAMILIES` (the families
 * whose operations are routed at major 2) is derived from this list. To add a family: write
 * `<family>.ts` here exporting a `V2FamilyRecord`, and add it below (keep the list sorted by family).
 */
export const V2_RECORDS: readonly V2FamilyRecord[] = [AUTH_RECORD, CONNECTIONS_RECORD, IDEMPOTENCY_RECORD, INTERRUPT_RECORD, MCP_RECORD, MULTI_AGENT_RECORD, OAUTH_RECORD, REPLAY_RECORD, RUN_LIST_RECORD, TOOL_CATALOG_RECORD, WEBHOOKS_RECORD, WORKFLOW_CHAIN_PACKS_RECORD];
