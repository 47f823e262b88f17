import { Injectable } from '@nestjs/common';
import type { Principal } from '../../platform/identity/principal';
import { MCP_EXPOSE_PROMPT, MCP_EXPOSE_RESOURCE, MCP_EXPOSE_TOOL, MCP_HANDLE_ELICITATION, MCP_HANDLE_SAMPLING, MCP_NAME, TransportRunsService, WorkflowResolver, type ResolvedChain } from '../../capabilities/runs';
import { ToolCatalogService } from '../../capabilities/tool-catalog';

/** One MCP tool of the mount: an exposed chain, or a tool of the caller's governed catalog. */
export interface ExposedTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  /** The chain a call runs (an exposed chain, or the host chain that calls one catalog tool). */
  workflowId?: string;
  /** The catalog tool a call runs (through `openwop.call-tool`). */
  toolId?: string;
  safetyTier?: string;
  /** The chain has a step that asks a person (an approval, a clarification, an elicitation): a call may need `elicitation`. */
  suspends?: boolean;
}

export interface ExposedResource {
  uri: string;
  name: string;
  mimeType?: string;
  description?: string;
  workflowId: string;
}

/** A chain answering MCP `sampling/createMessage` (its last step is `core.openwop.mcp.handle-sampling`). */
export interface SamplingHandler {
  workflowId: string;
  /** The handle-sampling step, whose output is the CreateMessageResult. */
  nodeId: string;
  /** The model name the chain answers as (and a caller's `modelPreferences.hints` select by). */
  model: string;
}

export interface ExposedPrompt {
  name: string;
  description?: string;
  arguments: Array<{ name: string; description?: string; required?: boolean }>;
  workflowId: string;
}

/** Node types that stop a run for a person's answer, which an MCP caller gives through elicitation. */
const ASKING = new Set(['core.approval', 'core.clarification', MCP_HANDLE_ELICITATION]);

/** The scopes a catalog tool's call needs beyond its own: reading the catalog and starting the run. */
export const CATALOG_CALL_SCOPES = ['tools:read', 'runs:create'];

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function nodesOf(chain: ResolvedChain): Array<{ typeId: string; config: Record<string, unknown> }> {
  const nodes = Array.isArray(chain.dag?.nodes) ? (chain.dag.nodes as Array<Record<string, unknown>>) : [];
  return nodes.filter((n) => isObject(n) && typeof n.typeId === 'string').map((n) => ({ typeId: n.typeId as string, config: isObject(n.config) ? n.config : {} }));
}

/** A catalog tool id as an MCP tool name: what the MCP naming rule does not allow becomes `_` (the id stays in `_meta`). */
export function mcpNameOfToolId(toolId: string): string {
  return toolId.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 128);
}

/**
 * What the mount shows one caller, from the tenant-scoped registries: the chains the caller's
 * tenant (and workspace) has installed that are marked as exposed (a `core.openwop.mcp.expose-*`
 * node), each only if the caller holds every scope a run of it needs, and the tools of the caller's
 * governed catalog it may call (with `tools:read`, `runs:create` and the tool's own scopes), except
 * `workflow` tools: a chain appears only when it is marked as exposed. Sorted by name (or uri); the
 * first of two that share a name wins (exposed chains before catalog tools).
 */
@Injectable()
export class McpExposure {
  constructor(
    private readonly resolver: WorkflowResolver,
    private readonly runs: TransportRunsService,
    private readonly catalog: ToolCatalogService,
  ) {}

  private async permitted(principal: Principal, chains: ResolvedChain[]): Promise<ResolvedChain[]> {
    const out: ResolvedChain[] = [];
    for (const c of chains) {
      const needed = await this.runs.requiredScopes(principal, c.chainId);
      if (needed.every((s) => principal.scopes.has(s))) out.push(c);
    }
    return out;
  }

  private async exposing(principal: Principal, typeId: string): Promise<Array<{ chain: ResolvedChain; config: Record<string, unknown> }>> {
    const chains = await this.resolver.list(principal);
    const marked = chains.filter((c) => nodesOf(c).some((n) => n.typeId === typeId));
    return (await this.permitted(principal, marked)).map((chain) => ({ chain, config: nodesOf(chain).find((n) => n.typeId === typeId)!.config }));
  }

  async tools(principal: Principal): Promise<ExposedTool[]> {
    const byName = new Map<string, ExposedTool>();
    for (const { chain, config } of await this.exposing(principal, MCP_EXPOSE_TOOL)) {
      const name = typeof config.name === 'string' && MCP_NAME.test(config.name) ? config.name : undefined;
      if (!name || byName.has(name)) continue;
      byName.set(name, {
        name,
        ...(typeof config.title === 'string' ? { title: config.title } : chain.label ? { title: chain.label } : {}),
        ...(typeof config.description === 'string' ? { description: config.description } : chain.description ? { description: chain.description } : {}),
        inputSchema: isObject(config.inputSchema) ? { type: 'object', ...config.inputSchema } : { type: 'object' },
        workflowId: chain.chainId,
        suspends: nodesOf(chain).some((n) => ASKING.has(n.typeId)),
      });
    }
    // The conformance fixtures, while the test seams serve them, are tools under their workflowId.
    for (const id of this.resolver.fixtureIds()) {
      if (byName.has(id) || !MCP_NAME.test(id)) continue;
      const chain = await this.resolver.describe(principal, id);
      if (!chain || (await this.permitted(principal, [chain])).length === 0) continue;
      byName.set(id, { name: id, ...(chain.description ? { description: chain.description } : {}), inputSchema: { type: 'object' }, workflowId: id, suspends: nodesOf(chain).some((n) => ASKING.has(n.typeId)) });
    }
    if (CATALOG_CALL_SCOPES.every((s) => principal.scopes.has(s))) {
      for (const e of await this.catalog.entries(principal)) {
        const d = e.descriptor;
        if (d.source === 'workflow' || !this.catalog.invocable(e)) continue;
        if ((d.auth?.scopes ?? []).some((s) => !principal.scopes.has(s))) continue;
        const name = mcpNameOfToolId(d.toolId);
        if (byName.has(name)) continue;
        byName.set(name, {
          name,
          title: d.title ?? d.toolId,
          ...(d.description ? { description: d.description } : {}),
          inputSchema: isObject(d.inputSchema) ? { type: 'object', ...d.inputSchema } : { type: 'object' },
          ...(isObject(d.outputSchema) && d.outputSchema.type === 'object' ? { outputSchema: d.outputSchema } : {}),
          toolId: d.toolId,
          safetyTier: d.safetyTier,
        });
      }
    }
    return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async tool(principal: Principal, name: string): Promise<ExposedTool | undefined> {
    return (await this.tools(principal)).find((t) => t.name === name);
  }

  async resources(principal: Principal): Promise<ExposedResource[]> {
    const byUri = new Map<string, ExposedResource>();
    for (const { chain, config } of await this.exposing(principal, MCP_EXPOSE_RESOURCE)) {
      if (typeof config.uri !== 'string' || typeof config.name !== 'string' || byUri.has(config.uri)) continue;
      byUri.set(config.uri, {
        uri: config.uri,
        name: config.name,
        ...(typeof config.mimeType === 'string' ? { mimeType: config.mimeType } : {}),
        ...(typeof config.description === 'string' ? { description: config.description } : {}),
        workflowId: chain.chainId,
      });
    }
    return [...byUri.values()].sort((a, b) => (a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0));
  }

  async prompts(principal: Principal): Promise<ExposedPrompt[]> {
    const byName = new Map<string, ExposedPrompt>();
    for (const { chain, config } of await this.exposing(principal, MCP_EXPOSE_PROMPT)) {
      if (typeof config.name !== 'string' || !MCP_NAME.test(config.name) || byName.has(config.name)) continue;
      const args = Array.isArray(config.arguments) ? (config.arguments as Array<Record<string, unknown>>).filter((a) => isObject(a) && typeof a.name === 'string') : [];
      byName.set(config.name, {
        name: config.name,
        ...(typeof config.description === 'string' ? { description: config.description } : {}),
        arguments: args.map((a) => ({ name: a.name as string, ...(typeof a.description === 'string' ? { description: a.description } : {}), ...(typeof a.required === 'boolean' ? { required: a.required } : {}) })),
        workflowId: chain.chainId,
      });
    }
    return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * The chain the legacy elicitation bridge starts: the first (by id) the caller may run that has a
   * `core.openwop.mcp.handle-elicitation` node and exposes no tool.
   */
  async elicitationHandler(principal: Principal): Promise<string | undefined> {
    const chains = (await this.resolver.list(principal)).filter((c) => {
      const types = nodesOf(c).map((n) => n.typeId);
      return types.includes(MCP_HANDLE_ELICITATION) && !types.includes(MCP_EXPOSE_TOOL);
    });
    return (await this.permitted(principal, chains))[0]?.chainId;
  }

  /**
   * The chains the legacy sampling bridge may start, sorted by id: those the caller may run that end
   * in a `core.openwop.mcp.handle-sampling` step (one no edge leaves: its output is the reply) and
   * expose no tool. `model` is the step's `config.model`, else the chain id.
   */
  async samplingHandlers(principal: Principal): Promise<SamplingHandler[]> {
    const out: SamplingHandler[] = [];
    for (const c of await this.resolver.list(principal)) {
      const nodes = Array.isArray(c.dag?.nodes) ? (c.dag.nodes as Array<Record<string, unknown>>).filter(isObject) : [];
      const edges = Array.isArray(c.dag?.edges) ? (c.dag.edges as Array<Record<string, unknown>>).filter(isObject) : [];
      if (nodes.some((n) => n.typeId === MCP_EXPOSE_TOOL)) continue;
      const froms = edges.map((e) => e.from).filter((f): f is string => typeof f === 'string');
      const step = nodes.find((n) => n.typeId === MCP_HANDLE_SAMPLING && typeof n.id === 'string' && !froms.some((f) => f === n.id || f.startsWith(`${n.id as string}.`)));
      if (!step) continue;
      const config = isObject(step.config) ? step.config : {};
      if ((await this.permitted(principal, [c])).length === 0) continue;
      out.push({ workflowId: c.chainId, nodeId: step.id as string, model: typeof config.model === 'string' && config.model ? config.model : c.chainId });
    }
    return out.sort((a, b) => (a.workflowId < b.workflowId ? -1 : a.workflowId > b.workflowId ? 1 : 0));
  }
}
