import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';
import { AuthorSchemas } from '../../../platform/schemas/author-schemas';
import { elicitationResumeSchema } from './mcp-tool-rounds';

/**
 * The node types by which a chain shows itself to MCP clients through the host's MCP server mount
 * (RFC 0020 §A, `mcp-integration.md`): a chain holding `core.openwop.mcp.expose-tool` is an MCP tool
 * of the tenant's mount, one holding `…expose-resource` a resource, `…expose-prompt` a prompt; a
 * `…handle-elicitation` node asks a person (a clarification interrupt the MCP caller answers with an
 * ElicitResult through MRTR, or anyone with approvals:respond answers in the approvals inbox).
 */
export const MCP_EXPOSE_TOOL = 'core.openwop.mcp.expose-tool';
export const MCP_EXPOSE_RESOURCE = 'core.openwop.mcp.expose-resource';
export const MCP_EXPOSE_PROMPT = 'core.openwop.mcp.expose-prompt';
export const MCP_HANDLE_ELICITATION = 'core.openwop.mcp.handle-elicitation';
export const MCP_HANDLE_SAMPLING = 'core.openwop.mcp.handle-sampling';
/** The interrupt profile of an elicitation a chain raises: its resume value is an MCP ElicitResult. */
export const MCP_ELICITATION_PROFILE = 'openwop-mcp-elicitation';

/** MCP tool and prompt names (the MCP naming rule: 1-128 of letters, digits, `_`, `-`, `.`). */
export const MCP_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const URI = /^[a-zA-Z][a-zA-Z0-9+.-]*:[^\s]{1,2040}$/;

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function optionalText(config: Record<string, unknown>, key: string, max: number, problems: string[]): void {
  const v = config[key];
  if (v !== undefined && (typeof v !== 'string' || v.length > max)) problems.push(`config.${key} must be a string of at most ${max} characters`);
}

function schemaProblems(config: Record<string, unknown>, key: string, problems: string[]): void {
  const v = config[key];
  if (v === undefined) return;
  if (!isObject(v)) return void problems.push(`config.${key} must be a JSON Schema object`);
  for (const p of AuthorSchemas.shared().problems(v)) problems.push(`config.${key}${p.path}: ${p.message}`);
}

/** `core.openwop.mcp.expose-tool {name, description?, inputSchema?}`: outputs the run's inputs (the tool's arguments). */
@Injectable()
@NodeExecutor({ typeId: MCP_EXPOSE_TOOL, replayPolicy: 'deterministic' })
export class McpExposeToolExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    if (typeof config.name !== 'string' || !MCP_NAME.test(config.name)) problems.push(`config.name must match ${MCP_NAME} (the MCP tool name)`);
    optionalText(config, 'title', 256, problems);
    optionalText(config, 'description', 4096, problems);
    schemaProblems(config, 'inputSchema', problems);
    if (isObject(config.inputSchema) && config.inputSchema.type !== undefined && config.inputSchema.type !== 'object') problems.push('config.inputSchema must describe an object (type "object")');
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    return { outputs: { ...ctx.runInputs } };
  }
}

/** `core.openwop.mcp.expose-resource {uri, name, mimeType?, description?, text?}`: outputs the resource (`text` when configured). */
@Injectable()
@NodeExecutor({ typeId: MCP_EXPOSE_RESOURCE, replayPolicy: 'deterministic' })
export class McpExposeResourceExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    if (typeof config.uri !== 'string' || !URI.test(config.uri) || config.uri.includes('..')) problems.push('config.uri must be an absolute URI (scheme:...) without ".." segments');
    if (typeof config.name !== 'string' || !config.name || config.name.length > 256) problems.push('config.name must be a non-empty string of at most 256 characters');
    optionalText(config, 'mimeType', 128, problems);
    optionalText(config, 'description', 4096, problems);
    optionalText(config, 'text', 1_000_000, problems);
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const c = ctx.config;
    return { outputs: { uri: c.uri, ...(typeof c.mimeType === 'string' ? { mimeType: c.mimeType } : {}), ...(typeof c.text === 'string' ? { text: c.text } : {}) } };
  }
}

/**
 * `core.openwop.mcp.expose-prompt {name, description?, text?, arguments?: [{name, description?, required?}]}`:
 * outputs `text`, the configured text followed by one `name: value` line per argument given. Arguments
 * are data: nothing in them is evaluated as a template.
 */
@Injectable()
@NodeExecutor({ typeId: MCP_EXPOSE_PROMPT, replayPolicy: 'deterministic' })
export class McpExposePromptExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    if (typeof config.name !== 'string' || !MCP_NAME.test(config.name)) problems.push(`config.name must match ${MCP_NAME} (the MCP prompt name)`);
    optionalText(config, 'description', 4096, problems);
    optionalText(config, 'text', 100_000, problems);
    const args = config.arguments;
    if (args !== undefined) {
      if (!Array.isArray(args) || args.length > 50) problems.push('config.arguments must be an array of at most 50 {name, description?, required?}');
      else
        args.forEach((a, i) => {
          if (!isObject(a) || typeof a.name !== 'string' || !MCP_NAME.test(a.name)) problems.push(`config.arguments[${i}].name must match ${MCP_NAME}`);
          else if (a.required !== undefined && typeof a.required !== 'boolean') problems.push(`config.arguments[${i}].required must be a boolean`);
        });
    }
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const declared = Array.isArray(ctx.config.arguments) ? (ctx.config.arguments as Array<{ name: string }>).map((a) => a.name) : Object.keys(ctx.runInputs).sort();
    const lines = typeof ctx.config.text === 'string' && ctx.config.text ? [ctx.config.text] : [];
    for (const name of declared) {
      const v = ctx.runInputs[name];
      if (v !== undefined) lines.push(`${name}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
    }
    return { outputs: { text: lines.join('\n') } };
  }
}

/**
 * `core.openwop.mcp.handle-elicitation {message?, requestedSchema?}`: suspends the run on a
 * clarification interrupt (profile `openwop-mcp-elicitation`) whose resume value is an MCP
 * ElicitResult (`{action: "accept", content}`, content checked against `requestedSchema`, or
 * `{action: "decline"}`), and outputs it. Without config, the run's inputs `message` and
 * `requestedSchema` are used (the legacy elicitation bridge starts it so).
 */
@Injectable()
@NodeExecutor({ typeId: MCP_HANDLE_ELICITATION, replayPolicy: 'idempotent' })
export class McpHandleElicitationExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    optionalText(config, 'message', 4096, problems);
    schemaProblems(config, 'requestedSchema', problems);
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const pick = (k: string) => ctx.config[k] ?? ctx.runInputs[k];
    const message = typeof pick('message') === 'string' && pick('message') ? (pick('message') as string).slice(0, 4096) : `Input requested by step ${ctx.nodeId}`;
    const requested = pick('requestedSchema');
    const requestedSchema = isObject(requested) && !AuthorSchemas.shared().problems(requested).length ? requested : { type: 'object', properties: {} };
    const value = (await ctx.interrupt({
      kind: 'clarification',
      title: message,
      resumeSchema: elicitationResumeSchema(requestedSchema),
      data: { profile: MCP_ELICITATION_PROFILE, message, requestedSchema },
    })) as { action?: string; content?: unknown };
    return { outputs: { action: value?.action ?? 'decline', ...(value?.content !== undefined ? { content: value.content } : {}) } };
  }
}

/** The longest reply a sampling handler answers (characters). */
const MAX_REPLY = 100_000;

/**
 * `core.openwop.mcp.handle-sampling {reply?, model?}`: the step that answers an MCP
 * `sampling/createMessage` the host's mount received (the legacy sampling bridge,
 * `serverMount.samplingBridge`): the chain holding it is the "model". The bridge starts the chain
 * with the request as run inputs (`messages`, `prompt` = the last user text, `maxTokens`,
 * `systemPrompt`, ...); the steps before this one compute the reply, and this step shapes it as an
 * MCP `CreateMessageResult` (`{role: "assistant", content: {type: "text", text}, model?, stopReason:
 * "endTurn"}`). The reply is `config.reply` (templated like every config: `{{nodes.<id>.<path>}}`,
 * `{{inputs.prompt}}`), else the string `text` output of its one direct upstream step. No reply
 * (no `reply`, no upstream `text`) fails the step `sampling_no_reply`: nothing is invented.
 */
@Injectable()
@NodeExecutor({ typeId: MCP_HANDLE_SAMPLING, replayPolicy: 'deterministic' })
export class McpHandleSamplingExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    optionalText(config, 'reply', MAX_REPLY, problems);
    optionalText(config, 'model', 256, problems);
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const texts = Object.values(ctx.inputs).filter(isObject).map((o) => o.text).filter((t): t is string => typeof t === 'string');
    const text = typeof ctx.config.reply === 'string' && ctx.config.reply ? ctx.config.reply : texts.length === 1 ? texts[0] : undefined;
    if (text === undefined || !text) {
      throw new NodeExecutionError(
        'sampling_no_reply',
        texts.length > 1
          ? `Step ${ctx.nodeId} has ${texts.length} upstream steps with a text output: name the reply with config.reply ({{nodes.<id>.text}}).`
          : `No step of this chain computed a reply: give step ${ctx.nodeId} a config.reply, or put before it a step whose outputs have a text.`,
      );
    }
    const model = typeof ctx.config.model === 'string' && ctx.config.model ? ctx.config.model : undefined;
    return { outputs: { role: 'assistant', content: { type: 'text', text: text.slice(0, MAX_REPLY) }, ...(model ? { model } : {}), stopReason: 'endTurn' } };
  }
}

export const MCP_MOUNT_EXECUTORS = [McpExposeToolExecutor, McpExposeResourceExecutor, McpExposePromptExecutor, McpHandleElicitationExecutor, McpHandleSamplingExecutor];
