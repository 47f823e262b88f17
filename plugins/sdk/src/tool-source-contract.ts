import { extensionMetadata } from './extension-point';
import { TOOL_SOURCE_KINDS, ToolCallResult, ToolDescriptor, ToolInvocationContext, ToolListingScope, ToolSource, ToolSourceKind, ToolSourceProvider } from './tool-source';

/** The `name` form of `@ToolSource` (logs, health, collisions). */
export const TOOL_SOURCE_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]*$/;

/** What the host requires of a host-extension tool id (RFC 0069 `x-host-<vendor>-*`). */
export const HOST_EXTENSION_TOOL_ID_PATTERN = /^x-host-[a-z0-9]+-/;

/** Tool ids travel as one URL path segment: no whitespace, no `/`, bounded length. */
const TOOL_ID_PATTERN = /^[^\s/\\?#%]{1,512}$/;

const DESCRIPTOR_KEYS = new Set(['toolId', 'source', 'title', 'description', 'inputSchema', 'outputSchema', 'auth', 'egress', 'approval', 'replayPolicy', 'safetyTier', 'costHint', 'latencyHint']);
const ENUMS: Record<string, readonly string[]> = {
  source: TOOL_SOURCE_KINDS,
  safetyTier: ['pure', 'read', 'write', 'exec'],
  egress: ['none', 'safe-fetch', 'host-mediated', 'host-owned'],
  approval: ['never', 'conditional', 'always'],
  replayPolicy: ['deterministic', 'idempotent', 'non-deterministic'],
  costHint: ['low', 'medium', 'high'],
  latencyHint: ['low', 'medium', 'high'],
};

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * Why the catalog would leave a descriptor out (empty when it serves it): the closed v1
 * `tool-descriptor.schema.json` shape (required `toolId`, `source`, `safetyTier`; no other keys; the
 * vocabularies; `exec` only from `host-extension`) and the host's own rules (`source` is the kind of
 * the source that listed it; ids fit a URL segment; host-extension ids start `x-host-<vendor>-`).
 */
export function toolDescriptorProblems(d: unknown, expectedSource: ToolSourceKind): string[] {
  if (!isObject(d)) return ['a descriptor must be an object'];
  const id = typeof d.toolId === 'string' ? d.toolId : JSON.stringify(d.toolId);
  const problems: string[] = [];
  const at = (m: string) => problems.push(`${id}: ${m}`);
  for (const k of Object.keys(d)) if (!DESCRIPTOR_KEYS.has(k)) at(`unknown key "${k}" (descriptors are closed)`);
  if (typeof d.toolId !== 'string' || !d.toolId) at('toolId must be a non-empty string');
  else {
    if (!TOOL_ID_PATTERN.test(d.toolId)) at('toolId must be 1-512 characters without whitespace, "/", "\\", "?", "#" or "%"');
    if (d.source === 'host-extension' && !HOST_EXTENSION_TOOL_ID_PATTERN.test(d.toolId)) at('a host-extension tool id must start with x-host-<vendor>-');
  }
  if (d.safetyTier === undefined) at('safetyTier is required');
  for (const [k, values] of Object.entries(ENUMS)) {
    if (d[k] !== undefined && !values.includes(d[k] as string)) at(`${k} ${JSON.stringify(d[k])} is not one of ${values.join(', ')}`);
  }
  if (d.source !== expectedSource) at(`source must be "${expectedSource}" (the kind of the source that lists it)`);
  if (d.safetyTier === 'exec' && d.source !== 'host-extension') at('an exec-tier tool must come from host-extension');
  for (const k of ['title', 'description']) if (d[k] !== undefined && typeof d[k] !== 'string') at(`${k} must be a string`);
  for (const k of ['inputSchema', 'outputSchema']) if (d[k] !== undefined && !isObject(d[k])) at(`${k} must be a JSON Schema object`);
  if (d.auth !== undefined) {
    if (!isObject(d.auth)) at('auth must be an object');
    else {
      for (const k of Object.keys(d.auth)) if (k !== 'scopes' && k !== 'credentialRef') at(`auth carries "${k}": only scopes and credentialRef (never credential material)`);
      const scopes = d.auth.scopes;
      if (scopes !== undefined && (!Array.isArray(scopes) || scopes.some((s) => typeof s !== 'string') || new Set(scopes).size !== scopes.length)) at('auth.scopes must be distinct strings');
      if (d.auth.credentialRef !== undefined && typeof d.auth.credentialRef !== 'boolean') at('auth.credentialRef must be a boolean');
    }
  }
  return problems;
}

export interface ToolSourceContractOptions {
  /** Whose catalog is listed (default a contract tenant). */
  scope?: ToolListingScope;
  /**
   * Calls to make through `openSession` (default: every listed tool whose `sampleArguments` answers
   * arguments). `expect` is the `status` the call must answer (default `ok`).
   */
  calls?: Array<{ toolId: string; args: Record<string, unknown>; expect?: 'ok' | 'error' }>;
  /** The invoking principal's id and scopes (default a contract principal holding every scope the called tool asks for). */
  principal?: { principal: string; scopes: ReadonlySet<string> };
}

export interface ToolSourceContractReport {
  /** Contract violations (empty when the source conforms). */
  problems: string[];
  /** The descriptors of the first listing. */
  tools: ToolDescriptor[];
  /** Each call made, with its result when it answered one. */
  calls: Array<{ toolId: string; args: Record<string, unknown>; result?: ToolCallResult }>;
}

/**
 * Contract test kit for tool sources: lists and calls the provider the way the host's catalog and
 * tool sessions do, and returns what violates the contract. It checks that the class carries a valid
 * `@ToolSource` declaration; that `listTools` answers an array of descriptors the catalog would serve
 * ({@link toolDescriptorProblems}) with distinct tool ids; that a second listing answers the same
 * descriptors (ids are stable across reads); that `projects()`, when present, answers a boolean; and,
 * when the source has `openSession`, that each call (the `calls` given, else every tool with
 * `sampleArguments`) answers a `ToolCallResult` (`status` ok or error as expected, an
 * `error {code, message}` with error, a finite `costUsd >= 0`, JSON content) given the arguments its
 * input schema requires, and that the session closes. A call that rejects counts as an error result,
 * as it does in the host.
 */
export async function checkToolSourceContract(source: ToolSourceProvider, opts: ToolSourceContractOptions = {}): Promise<ToolSourceContractReport> {
  const problems: string[] = [];
  const calls: ToolSourceContractReport['calls'] = [];
  const meta = extensionMetadata(ToolSource, source);
  if (!meta) problems.push('the class is not decorated with @ToolSource({ source, name })');
  else {
    if (!TOOL_SOURCE_KINDS.includes(meta.source)) problems.push(`@ToolSource source ${JSON.stringify(meta.source)} is not one of ${TOOL_SOURCE_KINDS.join(', ')}`);
    if (typeof meta.name !== 'string' || !TOOL_SOURCE_NAME_PATTERN.test(meta.name)) problems.push(`@ToolSource name ${JSON.stringify(meta.name)} must match ${TOOL_SOURCE_NAME_PATTERN}`);
    if (meta.cacheTtlMs !== undefined && !(Number.isInteger(meta.cacheTtlMs) && meta.cacheTtlMs >= 0)) problems.push('@ToolSource cacheTtlMs must be an integer >= 0');
  }
  if (typeof source.listTools !== 'function') return { problems: [...problems, 'listTools() is missing'], tools: [], calls };
  const kind: ToolSourceKind = meta?.source ?? 'host-extension';
  const scope: ToolListingScope = opts.scope ?? { tenant: 'contract-tenant' };

  const list = async (): Promise<ToolDescriptor[] | undefined> => {
    try {
      const tools = await source.listTools({ ...scope, signal: new AbortController().signal });
      if (!Array.isArray(tools)) {
        problems.push('listTools() must answer an array');
        return undefined;
      }
      return tools;
    } catch (e) {
      problems.push(`listTools() rejected: ${(e as Error)?.message ?? String(e)}`);
      return undefined;
    }
  };
  const tools = (await list()) ?? [];
  const ids = new Set<string>();
  for (const d of tools) {
    problems.push(...toolDescriptorProblems(d, kind));
    if (typeof d?.toolId === 'string') {
      if (ids.has(d.toolId)) problems.push(`${d.toolId}: listed twice`);
      ids.add(d.toolId);
    }
  }
  const again = await list();
  if (again) {
    const canonical = (ds: ToolDescriptor[]) => JSON.stringify([...ds].sort((a, b) => (a.toolId < b.toolId ? -1 : a.toolId > b.toolId ? 1 : 0)));
    if (canonical(again) !== canonical(tools)) problems.push('a second listTools() answered different descriptors: tool ids and descriptors must be stable across reads');
  }
  if (source.projects) {
    const p = await source.projects();
    if (typeof p !== 'boolean') problems.push('projects() must answer a boolean');
  }

  const planned: NonNullable<ToolSourceContractOptions['calls']> =
    opts.calls ??
    tools.flatMap((d) => {
      const args = source.sampleArguments?.(d.toolId);
      return args ? [{ toolId: d.toolId, args }] : [];
    });
  if (planned.length && !source.openSession) problems.push('calls were asked for but the source has no openSession()');
  else if (source.openSession) {
    for (const c of planned) {
      const descriptor = tools.find((d) => d.toolId === c.toolId);
      if (!descriptor) {
        problems.push(`${c.toolId}: not in the listing, so no session would be opened for it`);
        continue;
      }
      const required = (descriptor.inputSchema as { required?: unknown } | undefined)?.required;
      if (Array.isArray(required)) for (const r of required) if (typeof r === 'string' && !(r in c.args)) problems.push(`${c.toolId}: the arguments lack "${r}", which its inputSchema requires`);
      const ctx: ToolInvocationContext = {
        ...scope,
        principal: opts.principal?.principal ?? 'contract-principal',
        scopes: opts.principal?.scopes ?? new Set(descriptor.auth?.scopes ?? []),
        signal: new AbortController().signal,
      };
      const record: ToolSourceContractReport['calls'][number] = { toolId: c.toolId, args: c.args };
      calls.push(record);
      let session;
      try {
        session = await source.openSession(c.toolId, ctx);
      } catch (e) {
        problems.push(`${c.toolId}: openSession() rejected: ${(e as Error)?.message ?? String(e)}`);
        continue;
      }
      if (!session || typeof session.call !== 'function' || typeof session.close !== 'function') {
        problems.push(`${c.toolId}: openSession() must answer { call(args, signal), close() }`);
        continue;
      }
      try {
        const result = await session.call(structuredClone(c.args), new AbortController().signal);
        record.result = result;
        if (!isObject(result) || (result.status !== 'ok' && result.status !== 'error')) problems.push(`${c.toolId}: call() must answer { status: "ok" | "error" }`);
        else {
          const expected = c.expect ?? 'ok';
          if (result.status !== expected) problems.push(`${c.toolId}: call() answered ${result.status}${result.error ? ` (${result.error.code}: ${result.error.message})` : ''}, expected ${expected}`);
          if (result.status === 'error' && !(isObject(result.error) && typeof result.error.code === 'string' && typeof result.error.message === 'string')) problems.push(`${c.toolId}: an error result needs error { code, message }`);
          if (result.costUsd !== undefined && !(typeof result.costUsd === 'number' && Number.isFinite(result.costUsd) && result.costUsd >= 0)) problems.push(`${c.toolId}: costUsd must be a finite number >= 0`);
          if (result.content !== undefined) {
            try {
              JSON.stringify(result.content);
            } catch {
              problems.push(`${c.toolId}: content must be JSON`);
            }
          }
        }
      } catch (e) {
        // The host takes a rejection for an error result (losing any cost the call had).
        if ((c.expect ?? 'ok') === 'ok') problems.push(`${c.toolId}: call() rejected: ${(e as Error)?.message ?? String(e)}`);
      } finally {
        try {
          await session.close();
        } catch (e) {
          problems.push(`${c.toolId}: close() rejected: ${(e as Error)?.message ?? String(e)}`);
        }
      }
    }
  }
  return { problems, tools, calls };
}
