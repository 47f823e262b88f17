import { ValidationError } from '../errors/domain-error';
import { v2RunError } from '../errors/v2-envelope';
import { legacySubject, readSubject, type Subject } from '../identity/subject';

/**
 * The major-2 representations of run answers (spec v2 runs.md, `schemas/v2/run-snapshot.schema.json`,
 * docs/versions.md), rendered from what the `/v1` handlers answer: both majors run the same
 * handlers, and only these projections differ. Ids are bound afterwards (bound-ids.ts).
 */

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The extension record (`extensions.<org>.<name>`) holding the host's run state the closed v2 snapshot has no seat for. */
export const RUN_EXTENSION = 'openwop-host.run';

/** The keys of the closed v2 RunSnapshot, in the order they are written. */
const SNAPSHOT_KEYS = [
  'runId', 'workflowId', 'status', 'compensationStatus', 'owner', 'currentNodeId', 'startedAt', 'completedAt', 'agent', 'runOrchestrator',
  'nodeStates', 'variables', 'channels', 'error', 'engineVersion', 'eventLogSchemaVersion', 'tags', 'metadata', 'configurable', 'metrics',
  'parentRunId', 'inputs', 'extensions',
] as const;
const SNAPSHOT_KEY_SET: ReadonlySet<string> = new Set(SNAPSHOT_KEYS);
/** Links a create answer carries beside the snapshot (v2-created-run-readable reads them). */
const LINKS = ['eventsUrl', 'statusUrl'];

/** The subject a run's metadata recorded at creation, or the legacy subject of a run created before. */
export function runSubject(tenant: string, principal: string | undefined, metadata: unknown): Subject {
  return readSubject(isObject(metadata) ? metadata.subject : undefined) ?? legacySubject(tenant, principal);
}

/** Whether a JSON object is a v1 RunSnapshot (what the run operations answer). */
export function isRunSnapshot(o: unknown): o is Json {
  return isObject(o) && typeof o.runId === 'string' && typeof o.status === 'string' && isObject(o.owner) && typeof o.eventLogSchemaVersion === 'number';
}

/**
 * A v1 RunSnapshot as the closed v2 one: `owner: { tenant, workspace?, subject }`, the configurable
 * nested, a fork's source as `parentRunId`, `metrics.openwopCost` only; what v2 has no seat for
 * (a completed run's `outputs`, the suspended `interrupt`, `artifacts`, `fork`, a child run's
 * parent, `childRuns`, `metrics.nodeExecutions`) under `extensions["openwop-host.run"]`.
 */
export function toV2Snapshot(s: Json, subject: Subject): Json {
  const owner = s.owner as Json;
  const out: Json = {};
  const ext: Json = {};
  for (const [k, v] of Object.entries(s)) {
    if (LINKS.includes(k)) continue;
    if (!SNAPSHOT_KEY_SET.has(k)) ext[k] = v;
  }
  const v2: Json = {
    ...s,
    owner: { tenant: owner.tenant, ...(typeof owner.workspace === 'string' ? { workspace: owner.workspace } : {}), subject },
  };
  // The v2 root does not list `compensation`: a host that does not advertise it omits the rollup (compensation.md §D).
  delete v2.compensationStatus;
  if (isObject(s.configurable)) v2.configurable = nestConfigurable(s.configurable);
  if (isObject(s.metrics)) {
    const { openwopCost, ...rest } = s.metrics;
    if (Object.keys(rest).length) ext.metrics = rest;
    if (isObject(openwopCost)) v2.metrics = { openwopCost };
    else delete v2.metrics;
  }
  if (isObject(s.error)) v2.error = { code: (v2RunError(s.error) as Json).code, message: s.error.message || String(s.error.code), ...(isObject(s.error.details) ? { details: s.error.details } : {}) };
  const fork = isObject(s.fork) ? s.fork : undefined;
  if (fork && typeof fork.sourceRunId === 'string') {
    v2.parentRunId = fork.sourceRunId;
    if (typeof s.parentRunId === 'string') ext.parentRunId = s.parentRunId;
  }
  for (const k of SNAPSHOT_KEYS) if (v2[k] !== undefined) out[k] = v2[k];
  if (Object.keys(ext).length) out.extensions = { ...(isObject(out.extensions) ? out.extensions : {}), [RUN_EXTENSION]: ext };
  for (const k of LINKS) if (s[k] !== undefined) out[k] = s[k];
  return out;
}

/**
 * The v2 `configurable` (configurable.schema.json: closed, nested, versioned) and the flat v1 one the
 * handlers take. Every v2 key has its v1 twin; `extensions.<org>` keeps its own name.
 */
const SECTIONS: Record<string, Record<string, (v: unknown) => boolean>> = {
  run: {
    recursionLimit: (v) => Number.isInteger(v) && (v as number) >= 1,
    runTimeoutMs: (v) => Number.isInteger(v) && (v as number) >= 1,
    maxLoopIterations: (v) => Number.isInteger(v) && (v as number) >= 1,
    escalationThreshold: (v) => typeof v === 'number' && v >= 0 && v <= 1,
  },
  ai: {
    provider: (v) => typeof v === 'string',
    model: (v) => typeof v === 'string',
    temperature: (v) => typeof v === 'number' && v >= 0 && v <= 2,
    maxTokens: (v) => Number.isInteger(v) && (v as number) >= 1,
    credentialRef: (v) => typeof v === 'string',
    promptOverrides: (v) => isObject(v) && Object.values(v).every((x) => typeof x === 'string'),
    mockProvider: (v) => isObject(v),
    reasoningVerbosity: (v) => v === 'none' || v === 'summary' || v === 'full',
    maxRefusals: (v) => Number.isInteger(v) && (v as number) >= 0,
  },
  distillation: { tokenBudget: (v) => Number.isInteger(v) && (v as number) >= 1 },
};
/** The v1 (flat) name of a v2 key, where it differs from the key itself. */
const V1_NAME: Record<string, string> = { 'distillation.tokenBudget': 'distillationTokenBudget' };
const EXTENSION_KEY = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/**
 * A major-2 `configurable` checked against the closed v2 schema and flattened to the v1 keys the
 * handlers read. Anything the schema refuses (a missing or other `version`, an unknown root or
 * section key, a dotted key, a wrong type) is `400 validation_error` naming the field.
 */
export function flattenV2Configurable(c: unknown): Json {
  const refuse = (field: string, why: string): never => {
    throw new ValidationError(`configurable${field ? `.${field}` : ''} ${why} (the v2 configurable is closed, nested and versioned: { version: 1, run?, ai?, distillation?, budget?, extensions? }).`, { field: `configurable${field ? `.${field}` : ''}` });
  };
  if (!isObject(c)) return refuse('', 'must be an object');
  if (c.version !== 1) refuse('version', 'must be 1');
  const flat: Json = {};
  for (const [k, v] of Object.entries(c)) {
    if (k === 'version') continue;
    if (k === 'budget') {
      if (!isObject(v)) refuse(k, 'must be an object');
      flat.budget = v;
      continue;
    }
    if (k === 'extensions') {
      if (!isObject(v)) refuse(k, 'must be an object');
      for (const [org, rec] of Object.entries(v as Json)) {
        if (!EXTENSION_KEY.test(org) || !isObject(rec)) refuse(`extensions.${org}`, 'must be an object under a lower-kebab org key');
      }
      flat.extensions = v;
      continue;
    }
    const section = SECTIONS[k];
    if (!section) return refuse(k, 'is not a key of the v2 configurable');
    if (!isObject(v)) refuse(k, 'must be an object');
    for (const [key, value] of Object.entries(v as Json)) {
      const check = section[key];
      if (!check) refuse(`${k}.${key}`, 'is not a key of its section');
      if (!check(value)) refuse(`${k}.${key}`, 'has the wrong type or range');
      flat[V1_NAME[`${k}.${key}`] ?? key] = value;
    }
  }
  return flat;
}

/** A stored (flat, v1) configurable as the nested v2 one: the inverse of flattenV2Configurable for the keys it knows. */
export function nestConfigurable(flat: Json): Json {
  const out: Json = { version: 1 };
  const sectionOf = (key: string): [string, string] | undefined => {
    for (const [section, keys] of Object.entries(SECTIONS)) {
      for (const k of Object.keys(keys)) if ((V1_NAME[`${section}.${k}`] ?? k) === key) return [section, k];
    }
    return undefined;
  };
  const extras: Json = {};
  for (const [k, v] of Object.entries(flat)) {
    if (k === 'version') continue;
    if (k === 'budget' && isObject(v)) out.budget = v;
    else if (k === 'extensions' && isObject(v)) out.extensions = { ...(isObject(out.extensions) ? out.extensions : {}), ...v };
    else {
      const at = sectionOf(k);
      if (at) out[at[0]] = { ...(isObject(out[at[0]]) ? (out[at[0]] as Json) : {}), [at[1]]: v };
      else extras[k] = v;
    }
  }
  // Keys a v1 client set that v2 has no seat for stay visible, under the host's extension.
  if (Object.keys(extras).length) out.extensions = { ...(isObject(out.extensions) ? out.extensions : {}), 'openwop-host': extras };
  return out;
}
