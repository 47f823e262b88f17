import { UnprocessableError, ValidationError } from '../../platform/errors/domain-error';
import { VARIABLE_WRITERS } from './run-variables';

/**
 * Deferred-parameter expansion of a workflow chain (workflow-chain-packs.md §"Deferred-parameter expansion", RFC 0124;
 * `format` on the minted variables, RFC 0136) and the run-time binding of what it leaves behind.
 *
 * Expansion, in place of substituting `{{params.x}}` with the author's values:
 * 1. every property of the chain's `parameters` becomes a top-level `WorkflowVariable`: `type` from its JSON-Schema
 *    type, `defaultValue` the author's value (else the schema's `default`), `required` from `parameters.required`,
 *    `description`, and `format` copied verbatim when the parameter is a string that declares one (never checked: it is
 *    advisory). A sensitive parameter (`x-openwop-sensitive`) is never materialized: its value must not reach the bag.
 *    Variables keep the bare parameter name: this host registers an expanded chain as its own workflow (it is not
 *    spliced into a parent), so no two expansions share a variable bag, and the bare name is the override key anyway.
 * 2. `{{params.x}}` in a prompt body (`config.systemPrompt` / `userPrompt`) becomes a `{{x}}` slot bound by
 *    `config.promptVariables` (`source: "variable"`, or `"secret"` for a sensitive parameter); a whole-value
 *    `{{params.x}}` in any other config or inputs position becomes a variable-sourced PortValue
 *    `{source: "variable", variable: x}`; one embedded in other text is resolved now (it has no portable run-time
 *    home). A sensitive parameter anywhere but a prompt body fails closed: `sensitive_param_not_deferrable` (422).
 * 3. the result holds no `{{params.*}}` token; `deferredParameters` lists the parameters a run may override.
 *
 * At run time (`bindDeferred`) the bag is the variables' defaults, then the run's `configurable` for the deferred
 * parameters (the per-run override, which a fork inherits with the rest of `configurable`), then what the run's
 * nodes wrote; a PortValue reads the bag, and a prompt slot composes as untrusted content (`<UNTRUSTED>` fenced,
 * `contentTrust: "untrusted"`, whatever the value's origin). A secret slot composes as `[REDACTED:<credentialRef>]`:
 * this host sends no prompt to a model, so the secret itself is never resolved into any text it keeps.
 */

/** The config fields whose text is a prompt body (the only home of a sensitive parameter). */
export const PROMPT_FIELDS: ReadonlySet<string> = new Set(['systemPrompt', 'userPrompt']);
const WORKFLOW_VARIABLE_TYPES = new Set(['string', 'number', 'boolean', 'object', 'array']);
const PARAM = /\{\{\s*params\.([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}/g;
const WHOLE_PARAM = /^\{\{\s*params\.([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}$/;
const SLOT = /\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}/g;
/** A bound prompt slot while the node's config is templated (templating fills every `{{...}}` it sees). */
const SHIELDED = /\u0000slot:([A-Za-z_][A-Za-z0-9_-]*)\u0000/g;
/** What a sensitive parameter's per-run value must look like: a credential reference, never a value. */
const CREDENTIAL_REF = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;

export interface MaterializedVariable {
  name: string;
  type: string;
  description?: string;
  defaultValue?: unknown;
  required?: boolean;
  format?: string;
}

export interface PromptVariableBinding {
  name: string;
  source: 'variable' | 'secret';
}

export interface DeferredChain {
  chainId: string;
  parameters?: Record<string, unknown>;
  dag?: { nodes?: unknown[]; edges?: unknown[] };
}

export interface DeferredExpansion {
  /** The expanded DAG: rewritten nodes, the edges and `variables[]`. */
  dag: { nodes: Array<Record<string, unknown>>; edges: unknown[]; variables: MaterializedVariable[] };
  /** The parameters a run may override through `configurable` (their bare names). */
  deferredParameters: Array<{ name: string; sensitive: boolean }>;
  variables: MaterializedVariable[];
  promptVariables: PromptVariableBinding[];
  /** Accepts each deferred parameter's bare name as a `configurable` key (a sensitive one as a credentialRef string). */
  configurableSchema: { type: 'object'; properties: Record<string, Record<string, unknown>> };
}

interface ParamSchema {
  type?: unknown;
  description?: unknown;
  format?: unknown;
  default?: unknown;
  'x-openwop-sensitive'?: unknown;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

function variableType(t: unknown): string {
  if (t === 'integer') return 'number';
  return typeof t === 'string' && WORKFLOW_VARIABLE_TYPES.has(t) ? t : 'string';
}

function notDeferrable(param: string, where: string): UnprocessableError {
  return new UnprocessableError('sensitive_param_not_deferrable', `Parameter "${param}" is sensitive and appears in ${where}: a sensitive parameter is deferrable only in a prompt body.`, { param, where });
}

/** Deferred-parameter expansion of `chain` with the author's values (see the file comment). */
export function expandDeferred(chain: DeferredChain, authorValues: Record<string, unknown> = {}): DeferredExpansion {
  const parameters = isObject(chain.parameters) ? chain.parameters : {};
  const props: Record<string, ParamSchema> = isObject(parameters.properties) ? (parameters.properties as Record<string, ParamSchema>) : {};
  const required = new Set(Array.isArray(parameters.required) ? parameters.required.filter((r): r is string => typeof r === 'string') : []);
  const sensitive = (p: string) => props[p]?.['x-openwop-sensitive'] === true;
  const known = (p: string) => Object.prototype.hasOwnProperty.call(props, p);
  const promptVariables = new Map<string, PromptVariableBinding>();
  const valueOf = (p: string) => (Object.prototype.hasOwnProperty.call(authorValues, p) ? authorValues[p] : props[p]?.default);
  const resolveNow = (text: string, where: string) =>
    text.replace(PARAM, (_m, p: string) => {
      if (sensitive(p)) throw notDeferrable(p, where);
      const v = valueOf(p);
      return v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    });

  const rewrite = (value: unknown, where: string, promptBody: boolean): unknown => {
    if (typeof value === 'string') {
      if (promptBody) {
        return value.replace(PARAM, (_m, p: string) => {
          if (!known(p)) throw new ValidationError(`"{{params.${p}}}" in ${where} names no parameter of chain ${chain.chainId}.`, { field: where });
          promptVariables.set(p, { name: p, source: sensitive(p) ? 'secret' : 'variable' });
          return `{{${p}}}`;
        });
      }
      const whole = WHOLE_PARAM.exec(value);
      if (whole) {
        if (sensitive(whole[1])) throw notDeferrable(whole[1], `a whole-value ${where}`);
        if (!known(whole[1])) throw new ValidationError(`"{{params.${whole[1]}}}" in ${where} names no parameter of chain ${chain.chainId}.`, { field: where });
        return { source: 'variable', variable: whole[1] };
      }
      return resolveNow(value, where);
    }
    if (Array.isArray(value)) return value.map((v, i) => rewrite(v, `${where}/${i}`, false));
    if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rewrite(v, `${where}/${k}`, false)]));
    return value;
  };

  const nodes = (Array.isArray(chain.dag?.nodes) ? chain.dag!.nodes : []).filter(isObject).map((n) => {
    const out: Record<string, unknown> = { ...n };
    if (isObject(n.config)) {
      const config: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(n.config)) config[k] = rewrite(v, `node ${String(n.id)} config/${k}`, PROMPT_FIELDS.has(k) && typeof v === 'string');
      const own = [...new Set(Object.entries(n.config).filter(([k, v]) => PROMPT_FIELDS.has(k) && typeof v === 'string').flatMap(([, v]) => [...(v as string).matchAll(PARAM)].map((m) => m[1])))];
      if (own.length) config.promptVariables = own.map((p) => promptVariables.get(p)!);
      out.config = config;
    }
    if (isObject(n.inputs)) out.inputs = rewrite(n.inputs, `node ${String(n.id)} inputs`, false);
    return out;
  });

  const variables: MaterializedVariable[] = [];
  const configurableSchema: DeferredExpansion['configurableSchema'] = { type: 'object', properties: {} };
  const deferredParameters: Array<{ name: string; sensitive: boolean }> = [];
  for (const [p, s] of Object.entries(props)) {
    const type = variableType(s?.type);
    deferredParameters.push({ name: p, sensitive: sensitive(p) });
    if (sensitive(p)) {
      configurableSchema.properties[p] = { type: 'string', description: 'a credentialRef (a secret reference), never the value' };
      continue;
    }
    configurableSchema.properties[p] = { type };
    const v: MaterializedVariable = { name: p, type };
    if (typeof s?.description === 'string') v.description = s.description;
    const d = valueOf(p);
    if (d !== undefined) v.defaultValue = d;
    if (required.has(p)) v.required = true;
    if (type === 'string' && typeof s?.format === 'string') v.format = s.format;
    variables.push(v);
  }
  const dag = { nodes, edges: Array.isArray(chain.dag?.edges) ? chain.dag!.edges : [], variables };
  if (/\{\{\s*params\./.test(JSON.stringify(dag))) throw new ValidationError(`Chain ${chain.chainId} holds a {{params.*}} token this expansion cannot place.`);
  return { dag, deferredParameters, variables, promptVariables: [...promptVariables.values()], configurableSchema };
}

/**
 * The deferred parameters of a stored definition: the names its nodes bind at run time (a PortValue
 * `{source: "variable", variable}` or a prompt slot of `config.promptVariables`, `source: "secret"` for a sensitive
 * one). A definition expanded the ordinary way binds none, and nothing of this applies to its runs.
 */
export function deferredParametersOf(definition: unknown): Array<{ name: string; sensitive: boolean }> {
  if (isObject(definition)) {
    const known = scanned.get(definition);
    if (known) return known;
  }
  const found = new Map<string, boolean>();
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(visit);
    if (!isObject(v)) return;
    if (isPortValue(v)) found.set(v.variable, found.get(v.variable) ?? false);
    for (const [k, x] of Object.entries(v)) {
      if (k === 'promptVariables' && Array.isArray(x)) {
        for (const b of x) if (isObject(b) && typeof b.name === 'string') found.set(b.name, b.source === 'secret');
      } else visit(x);
    }
  };
  const nodes = isObject(definition) && Array.isArray(definition.nodes) ? definition.nodes : [];
  for (const n of nodes) if (isObject(n)) visit(n.config);
  const out = [...found].map(([name, sensitive]) => ({ name, sensitive }));
  if (isObject(definition)) scanned.set(definition, out);
  return out;
}

/** Each definition is scanned once (the engine asks for every node it starts). */
const scanned = new WeakMap<object, Array<{ name: string; sensitive: boolean }>>();

function isPortValue(v: Record<string, unknown>): v is { source: 'variable'; variable: string } {
  return v.source === 'variable' && typeof v.variable === 'string' && Object.keys(v).length === 2;
}

/**
 * The problems of a run's `configurable` for a definition with deferred parameters (run-options.md: `configurable`
 * is checked against the workflow's `configurableSchema`): a non-sensitive override has its variable's type; a
 * sensitive one is a credentialRef string, never a value or a `{{...}}` token.
 */
export function deferredConfigurableProblems(definition: unknown, configurable: Record<string, unknown>): Array<{ field: string; message: string }> {
  const out: Array<{ field: string; message: string }> = [];
  const declared = new Map((isObject(definition) && Array.isArray(definition.variables) ? definition.variables.filter(isObject) : []).map((v) => [v.name, v.type]));
  for (const d of deferredParametersOf(definition)) {
    if (!Object.prototype.hasOwnProperty.call(configurable, d.name)) continue;
    const v = configurable[d.name];
    const field = `configurable.${d.name}`;
    if (d.sensitive) {
      if (typeof v !== 'string' || !CREDENTIAL_REF.test(v)) out.push({ field, message: 'a sensitive parameter takes a credentialRef (a secret reference string), never a value' });
      continue;
    }
    const type = declared.get(d.name);
    const actual = Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v;
    if (typeof type === 'string' && actual !== type) out.push({ field, message: `must be of type ${type}` });
  }
  return out;
}

/** The planned run, refused (400) when its `configurable` overrides a deferred parameter wrongly. */
export function checkDeferredOverrides<T extends { definition: unknown }>(planned: T, configurable: Record<string, unknown>): T {
  const problems = deferredConfigurableProblems(planned.definition, configurable);
  if (problems.length) throw new ValidationError(problems.map((p) => `${p.field} ${p.message}`).join('; '), { field: problems[0].field, problems });
  return planned;
}

/** The bag a deferred binding reads: the variables' defaults, the run's overrides of deferred parameters, then node writes. */
export function deferredBag(definition: DeferredDefinition, deferred: Array<{ name: string; sensitive: boolean }>, configurable: Record<string, unknown> | null | undefined, outputs: ReadonlyMap<string, Record<string, unknown>>): Record<string, unknown> {
  const bag: Record<string, unknown> = {};
  for (const v of definition.variables ?? []) if (typeof v.name === 'string' && v.defaultValue !== undefined) bag[v.name] = v.defaultValue;
  for (const d of deferred) if (!d.sensitive && configurable && Object.prototype.hasOwnProperty.call(configurable, d.name)) bag[d.name] = configurable[d.name];
  for (const n of definition.nodes) {
    const written = VARIABLE_WRITERS.has(n.typeId) ? outputs.get(n.id)?.variables : undefined;
    if (isObject(written)) for (const [k, v] of Object.entries(written)) if (v !== undefined) bag[k] = v;
  }
  return bag;
}

/**
 * A node's config with its deferred bindings bound: PortValues read the bag; a prompt body with `promptVariables`
 * is composed (variable slots fenced as untrusted, secret slots redacted to their credentialRef), and the config
 * gains `contentTrust` and `variableBindings` (what each slot composed with) in place of `promptVariables`.
 */
export function bindDeferred(config: Record<string, unknown>, bag: Record<string, unknown>, secrets: Record<string, unknown>): Record<string, unknown> {
  const bindings = Array.isArray(config.promptVariables) ? (config.promptVariables as PromptVariableBinding[]) : [];
  const sourceOf = new Map(bindings.map((b) => [b.name, b.source]));
  const bound: Record<string, string> = {};
  let untrusted = false;
  const compose = (text: string) =>
    text.replace(SHIELDED, (_m, name: string) => {
      const source = sourceOf.get(name);
      if (source === 'secret') {
        const ref = typeof secrets[name] === 'string' ? (secrets[name] as string) : 'unset';
        return (bound[name] = `[REDACTED:${ref}]`);
      }
      untrusted = true;
      const v = bag[name];
      const value = v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
      bound[name] = value;
      return `<UNTRUSTED>${value}</UNTRUSTED>`;
    });
  const port = (value: unknown): unknown => {
    if (isObject(value) && isPortValue(value)) return bag[value.variable];
    if (Array.isArray(value)) return value.map(port);
    if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, port(v)]));
    return value;
  };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) {
    if (k === 'promptVariables') continue;
    out[k] = PROMPT_FIELDS.has(k) && typeof v === 'string' && bindings.length ? compose(v) : port(v);
  }
  if (bindings.length) {
    out.contentTrust = untrusted ? 'untrusted' : 'trusted';
    out.variableBindings = bound;
  }
  return out;
}

/** The shape of a stored definition the binding reads. */
export interface DeferredDefinition {
  nodes: Array<{ id: string; typeId: string; config?: Record<string, unknown> }>;
  variables?: Array<Record<string, unknown>>;
}

/**
 * A node's raw config with its bound prompt slots shielded from templating (which fills every `{{...}}`): what the
 * engine templates, so a slot is composed only from the bag, and a value composed into it is never templated.
 */
export function shieldDeferredSlots(config: Record<string, unknown>): Record<string, unknown> {
  const names = new Set(Array.isArray(config.promptVariables) ? (config.promptVariables as PromptVariableBinding[]).map((b) => b.name) : []);
  if (!names.size) return config;
  const out = { ...config };
  for (const k of PROMPT_FIELDS) {
    const v = out[k];
    if (typeof v === 'string') out[k] = v.replace(SLOT, (slot, name: string) => (names.has(name) ? `\u0000slot:${name}\u0000` : slot));
  }
  return out;
}

/** What the engine calls for each node it starts, on the templated shielded config: bound when the definition defers parameters. */
export function bindDeferredConfig(config: Record<string, unknown>, definition: DeferredDefinition, configurable: Record<string, unknown> | null | undefined, outputs: ReadonlyMap<string, Record<string, unknown>>): Record<string, unknown> {
  const deferred = deferredParametersOf(definition);
  if (!deferred.length) return config;
  const secrets = Object.fromEntries(deferred.filter((d) => d.sensitive && configurable && typeof configurable[d.name] === 'string').map((d) => [d.name, configurable![d.name]]));
  return bindDeferred(config, deferredBag(definition, deferred, configurable, outputs), secrets);
}
