/**
 * RFC 0151 §B (spec/v1/compensation.md): what a workflow declares about undoing its effects, as this
 * host reads and checks it when the workflow is parsed (registration and run creation):
 * - a node's closed `compensation {nodeTypeId, inputMapping?, retry?, timeoutMs?, requiresApproval?,
 *   waiveRequiresApproval?}` (its inverse action) or `irreversibleEffect: true` (its effect has none);
 * - the workflow policy `settings.compensation` (when an unwind starts and how it runs).
 * What the host does not implement is refused here, when it is declared, never discovered during the
 * unwind: an unadvertised ordering model or profile version, a trigger the host never fires, an
 * approval-gated inverse action, a parent-cancel mode other than `continue`.
 */

export const PROFILE_VERSION = '1';
export const ORDERING_MODELS = ['reverse-completion'] as const;
/** The triggers this host fires: a node failing the run, a run cancelled, a hard cap breached (RFC 0058 / 0084). */
export const FIRED_TRIGGERS = ['node-failure', 'run-cancel', 'cap-breach'] as const;
const ALL_TRIGGERS = ['node-failure', 'run-cancel', 'cap-breach', 'operator-request'];
export const MAX_INVERSE_ATTEMPTS = 10;
const MAX_BACKOFF_MS = 60_000;

export type Trigger = (typeof FIRED_TRIGGERS)[number];

export interface RetryBounds {
  maxAttempts: number;
  backoffMs: number;
}

/** A node's inverse action as declared (`inputMapping` values are literals or `${...}` references). */
export interface CompensationDeclaration {
  nodeTypeId: string;
  inputMapping: Record<string, unknown>;
  retry?: RetryBounds;
  timeoutMs?: number;
}

/** `settings.compensation` (compensation-policy.schema.json), its defaults filled in. */
export interface CompensationPolicy {
  profileVersion: string;
  orderingModel: string;
  triggers: Trigger[];
  retry?: RetryBounds;
  timeoutMs?: number;
  exhaustedDisposition: 'record-outcome' | 'manual-intervention';
}

export interface Problem {
  path: string;
  message: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const REFERENCE = /\$\{([^}]*)\}/g;
const NODE_REF = /^nodes\.([^.]+)\.output\.(.+)$/;
const INPUT_REF = /^inputs\.(.+)$/;

function retryOf(v: unknown, path: string, problems: Problem[]): RetryBounds | undefined {
  if (v === undefined) return undefined;
  if (!isObject(v)) return void problems.push({ path, message: 'retry must be an object {maxAttempts, backoffMs?}' });
  const { maxAttempts, backoffMs, ...rest } = v;
  if (!Number.isInteger(maxAttempts) || (maxAttempts as number) < 1 || (maxAttempts as number) > MAX_INVERSE_ATTEMPTS) problems.push({ path: `${path}/maxAttempts`, message: `maxAttempts must be an integer from 1 to ${MAX_INVERSE_ATTEMPTS}` });
  if (backoffMs !== undefined && (!Number.isInteger(backoffMs) || (backoffMs as number) < 0 || (backoffMs as number) > MAX_BACKOFF_MS)) problems.push({ path: `${path}/backoffMs`, message: `backoffMs must be an integer from 0 to ${MAX_BACKOFF_MS}` });
  for (const k of Object.keys(rest)) problems.push({ path: `${path}/${k}`, message: `${k} is not a retry field (maxAttempts, backoffMs)` });
  return { maxAttempts: maxAttempts as number, backoffMs: (backoffMs as number | undefined) ?? 0 };
}

function timeoutOf(v: unknown, path: string, problems: Problem[]): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 3_600_000) problems.push({ path, message: 'timeoutMs must be an integer from 1 to 3600000' });
  return v as number;
}

/** The `${...}` references of a mapping value, each checked against the two forms of the value grammar. */
function referenceProblems(value: unknown, path: string, nodeIds: ReadonlySet<string>, problems: Problem[]): void {
  if (Array.isArray(value)) return value.forEach((v, i) => referenceProblems(v, `${path}/${i}`, nodeIds, problems));
  if (isObject(value)) return Object.entries(value).forEach(([k, v]) => referenceProblems(v, `${path}/${k}`, nodeIds, problems));
  if (typeof value !== 'string') return;
  for (const m of value.matchAll(REFERENCE)) {
    const node = NODE_REF.exec(m[1]);
    if (node && !nodeIds.has(node[1])) problems.push({ path, message: `\${${m[1]}} names no node of this workflow` });
    else if (!node && !INPUT_REF.test(m[1])) problems.push({ path, message: `\${${m[1]}} is neither \${nodes.<nodeId>.output.<port>} nor \${inputs.<name>}` });
  }
}

/** A node's `compensation` / `irreversibleEffect`, checked; problems are pushed under `/dag/nodes/<i>`. */
export function nodeCompensation(n: Record<string, unknown>, i: number, nodeIds: ReadonlySet<string>, problems: Problem[]): { compensation?: CompensationDeclaration; irreversibleEffect?: true } {
  const at = `/dag/nodes/${i}`;
  const c = n.compensation;
  if (n.irreversibleEffect !== undefined && typeof n.irreversibleEffect !== 'boolean') problems.push({ path: `${at}/irreversibleEffect`, message: 'irreversibleEffect must be a boolean' });
  if (n.irreversibleEffect === true && c !== undefined) problems.push({ path: at, message: 'a node declaring irreversibleEffect cannot also declare compensation' });
  if (c === undefined) return n.irreversibleEffect === true ? { irreversibleEffect: true } : {};
  if (!isObject(c)) return void problems.push({ path: `${at}/compensation`, message: 'compensation must be an object {nodeTypeId, inputMapping?, retry?, timeoutMs?}' }), {};
  const { nodeTypeId, inputMapping, retry, timeoutMs, requiresApproval, waiveRequiresApproval, ...rest } = c;
  if (typeof nodeTypeId !== 'string' || !nodeTypeId) problems.push({ path: `${at}/compensation/nodeTypeId`, message: 'compensation.nodeTypeId must be a node type id' });
  if (inputMapping !== undefined && !isObject(inputMapping)) problems.push({ path: `${at}/compensation/inputMapping`, message: 'compensation.inputMapping must be an object' });
  else if (inputMapping) referenceProblems(inputMapping, `${at}/compensation/inputMapping`, nodeIds, problems);
  if (requiresApproval === true) problems.push({ path: `${at}/compensation/requiresApproval`, message: 'this host does not gate inverse actions behind approvals; requiresApproval: true is refused' });
  else if (requiresApproval !== undefined && requiresApproval !== false) problems.push({ path: `${at}/compensation/requiresApproval`, message: 'requiresApproval must be a boolean' });
  if (waiveRequiresApproval !== undefined && typeof waiveRequiresApproval !== 'boolean') problems.push({ path: `${at}/compensation/waiveRequiresApproval`, message: 'waiveRequiresApproval must be a boolean' });
  for (const k of Object.keys(rest)) problems.push({ path: `${at}/compensation/${k}`, message: `${k} is not a compensation field` });
  const decl: CompensationDeclaration = { nodeTypeId: nodeTypeId as string, inputMapping: isObject(inputMapping) ? inputMapping : {} };
  const r = retryOf(retry, `${at}/compensation/retry`, problems);
  if (r) decl.retry = r;
  const t = timeoutOf(timeoutMs, `${at}/compensation/timeoutMs`, problems);
  if (t !== undefined) decl.timeoutMs = t;
  return { compensation: decl };
}

/** `settings.compensation`, checked against what this host implements; undefined when the workflow has none. */
export function compensationPolicy(settings: unknown, problems: Problem[]): CompensationPolicy | undefined {
  if (!isObject(settings) || settings.compensation === undefined) return undefined;
  const at = '/dag/settings/compensation';
  const c = settings.compensation;
  if (!isObject(c)) return void problems.push({ path: at, message: 'settings.compensation must be an object' });
  const { profileVersion, orderingModel, triggers, retry, timeoutMs, exhaustedDisposition, approvalScope, onParentCancel, ...rest } = c;
  if (profileVersion !== undefined && profileVersion !== PROFILE_VERSION) problems.push({ path: `${at}/profileVersion`, message: `this host implements compensation profile version "${PROFILE_VERSION}"` });
  if (orderingModel !== undefined && !(ORDERING_MODELS as readonly unknown[]).includes(orderingModel)) problems.push({ path: `${at}/orderingModel`, message: `this host orders unwinds by ${ORDERING_MODELS.join(', ')}` });
  if (!Array.isArray(triggers) || !triggers.length) problems.push({ path: `${at}/triggers`, message: 'triggers must name at least one trigger' });
  else {
    triggers.forEach((t, i) => {
      if (!ALL_TRIGGERS.includes(t as string)) problems.push({ path: `${at}/triggers/${i}`, message: `"${String(t)}" is not a compensation trigger` });
      else if (!(FIRED_TRIGGERS as readonly unknown[]).includes(t)) problems.push({ path: `${at}/triggers/${i}`, message: `this host never fires the "${String(t)}" trigger` });
    });
  }
  if (exhaustedDisposition !== undefined && exhaustedDisposition !== 'record-outcome' && exhaustedDisposition !== 'manual-intervention') problems.push({ path: `${at}/exhaustedDisposition`, message: 'exhaustedDisposition is record-outcome or manual-intervention' });
  if (approvalScope === 'all') problems.push({ path: `${at}/approvalScope`, message: 'this host does not gate inverse actions behind approvals; approvalScope "all" is refused' });
  else if (approvalScope !== undefined && approvalScope !== 'declared') problems.push({ path: `${at}/approvalScope`, message: 'approvalScope is declared or all' });
  // The unwind runs once the run has ended, so a cancel never meets an active unwind: it always continues.
  if (onParentCancel !== undefined && onParentCancel !== 'continue') problems.push({ path: `${at}/onParentCancel`, message: 'this host implements onParentCancel "continue" only' });
  for (const k of Object.keys(rest)) problems.push({ path: `${at}/${k}`, message: `${k} is not a compensation policy field` });
  const policy: CompensationPolicy = {
    profileVersion: PROFILE_VERSION,
    orderingModel: 'reverse-completion',
    triggers: (Array.isArray(triggers) ? triggers : []).filter((t): t is Trigger => (FIRED_TRIGGERS as readonly unknown[]).includes(t)),
    exhaustedDisposition: exhaustedDisposition === 'manual-intervention' ? 'manual-intervention' : 'record-outcome',
  };
  const r = retryOf(retry, `${at}/retry`, problems);
  if (r) policy.retry = r;
  const t = timeoutOf(timeoutMs, `${at}/timeoutMs`, problems);
  if (t !== undefined) policy.timeoutMs = t;
  return policy;
}

/**
 * A mapping resolved against recorded facts (plan time): a value that is exactly one reference takes
 * the recorded value with its type, a reference inside text is substituted as text. A reference that
 * does not resolve throws: the mint fails rather than an inverse action getting a missing input.
 */
export function resolveMapping(value: unknown, facts: { inputs: Record<string, unknown>; outputs: ReadonlyMap<string, Record<string, unknown>> }): unknown {
  if (Array.isArray(value)) return value.map((v) => resolveMapping(v, facts));
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveMapping(v, facts)]));
  if (typeof value !== 'string') return value;
  const lookup = (ref: string): unknown => {
    const node = NODE_REF.exec(ref);
    const input = node ? undefined : INPUT_REF.exec(ref);
    const bag = node ? facts.outputs.get(node[1]) : input ? facts.inputs : undefined;
    const key = node ? node[2] : input?.[1];
    if (!bag || key === undefined || !Object.prototype.hasOwnProperty.call(bag, key)) throw new UnresolvedReference(ref);
    return bag[key];
  };
  const whole = /^\$\{([^}]*)\}$/.exec(value);
  if (whole) return lookup(whole[1]);
  return value.replace(REFERENCE, (_m, ref: string) => {
    const v = lookup(ref);
    return v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  });
}

export class UnresolvedReference extends Error {
  constructor(readonly reference: string) {
    super(`\${${reference}} does not resolve to a recorded fact`);
  }
}
