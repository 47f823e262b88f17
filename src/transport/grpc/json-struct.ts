import type { Enum, Field, Root, Type } from 'protobufjs';
import { WiringFault } from '../../platform/errors/internal-fault';

/**
 * JSON ↔ protobuf for the gRPC transport: google.protobuf.Struct / Value / ListValue in the object
 * form @grpc/proto-loader (de)serializes, and a codec that turns a whole message into the REST JSON
 * body it mirrors and back (snake_case field names ↔ camelCase members, Struct fields ↔ plain JSON).
 *
 * The codec reads the message types, so free-form JSON inside a Struct keeps its keys as they are:
 * renaming keys blindly ("deep camelCase") would corrupt caller data such as run inputs. Anything
 * the other side cannot carry is refused with a ProtoJsonError naming where, never dropped.
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** google.protobuf.Value as protobufjs and proto-loader hold it (the bundled types use these names). */
export type ProtoValue =
  | { nullValue: 'NULL_VALUE' }
  | { numberValue: number }
  | { stringValue: string }
  | { boolValue: boolean }
  | { structValue: ProtoStruct }
  | { listValue: ProtoListValue };
export interface ProtoStruct {
  fields: Record<string, ProtoValue>;
}
export interface ProtoListValue {
  values: ProtoValue[];
}

/** A value that cannot cross between JSON and protobuf; `path` is a JSON Pointer into the JSON side. */
export class ProtoJsonError extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path || '/'}: ${problem}`);
    this.name = 'ProtoJsonError';
  }
}

/** The Struct field that carries the members of an open JSON object the message does not declare. */
export const ADDITIONAL_PROPERTIES_FIELD = 'additional_properties';

const VALUE_KINDS = ['nullValue', 'numberValue', 'stringValue', 'boolValue', 'structValue', 'listValue'] as const;

function pointer(path: string, key: string | number): string {
  return `${path}/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;
}

/** Sets an own, enumerable member, so that a key such as "__proto__" is a key and not a prototype. */
function put(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function hasOwn(o: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(o, key);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** What JSON.stringify would write for `v` (toJSON honoured), so the gRPC form equals the REST body. */
function jsonForm(v: unknown): unknown {
  if (typeof v === 'object' && v !== null && typeof (v as { toJSON?: unknown }).toJSON === 'function') return (v as { toJSON(): unknown }).toJSON();
  return v;
}

/** Whether JSON.stringify leaves this member out of an object (and writes null in an array). */
function skippedByJson(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol';
}

// ------------------------------------------------------------------------------------------------
// JSON → Struct / Value / ListValue

export function jsonToValue(input: unknown, path = ''): ProtoValue {
  const v = jsonForm(input);
  if (v === null) return { nullValue: 'NULL_VALUE' };
  switch (typeof v) {
    case 'boolean':
      return { boolValue: v };
    case 'string':
      return { stringValue: v };
    case 'number':
      if (!Number.isFinite(v)) throw new ProtoJsonError(path, `${v} is not a JSON number`);
      return { numberValue: v };
    case 'object':
      return Array.isArray(v) ? { listValue: jsonToListValue(v, path) } : { structValue: jsonToStruct(v, path) };
    default:
      throw new ProtoJsonError(path, `a ${typeof v} is not a JSON value`);
  }
}

export function jsonToStruct(input: unknown, path = ''): ProtoStruct {
  const v = jsonForm(input);
  if (!isObject(v)) throw new ProtoJsonError(path, `expected a JSON object, got ${describe(v)}`);
  const fields: Record<string, ProtoValue> = {};
  for (const key of Object.keys(v)) {
    const member = v[key];
    if (skippedByJson(member)) continue;
    // protobufjs stores map entries by plain assignment, which would turn this key into a prototype.
    if (key === '__proto__') throw new ProtoJsonError(pointer(path, key), 'the member name "__proto__" cannot be carried in a google.protobuf.Struct');
    put(fields, key, jsonToValue(member, pointer(path, key)));
  }
  return { fields };
}

export function jsonToListValue(input: unknown, path = ''): ProtoListValue {
  const v = jsonForm(input);
  if (!Array.isArray(v)) throw new ProtoJsonError(path, `expected a JSON array, got ${describe(v)}`);
  return { values: v.map((item, i) => (skippedByJson(item) ? { nullValue: 'NULL_VALUE' as const } : jsonToValue(item, pointer(path, i)))) };
}

// ------------------------------------------------------------------------------------------------
// Struct / Value / ListValue → JSON

export function valueToJson(input: unknown, path = ''): JsonValue {
  if (!isObject(input)) throw new ProtoJsonError(path, `expected a google.protobuf.Value, got ${describe(input)}`);
  const set = VALUE_KINDS.filter((k) => input[k] !== undefined && input[k] !== null);
  if (set.length !== 1) throw new ProtoJsonError(path, set.length ? `a google.protobuf.Value sets ${set.join(' and ')}; it holds one kind` : 'a google.protobuf.Value with no kind set is not a JSON value');
  const kind = set[0];
  const v = input[kind];
  switch (kind) {
    case 'nullValue':
      if (v !== 'NULL_VALUE' && v !== 0) throw new ProtoJsonError(path, `nullValue must be NULL_VALUE, got ${describe(v)}`);
      return null;
    case 'numberValue':
      if (typeof v !== 'number' || !Number.isFinite(v)) throw new ProtoJsonError(path, `${describe(v)} is not a JSON number`);
      return v;
    case 'stringValue':
      if (typeof v !== 'string') throw new ProtoJsonError(path, `stringValue must be a string, got ${describe(v)}`);
      return v;
    case 'boolValue':
      if (typeof v !== 'boolean') throw new ProtoJsonError(path, `boolValue must be a boolean, got ${describe(v)}`);
      return v;
    case 'structValue':
      return structToJson(v, path);
    case 'listValue':
      return listValueToJson(v, path);
  }
}

export function structToJson(input: unknown, path = ''): JsonObject {
  if (!isObject(input)) throw new ProtoJsonError(path, `expected a google.protobuf.Struct, got ${describe(input)}`);
  // An empty Struct decodes without its (empty) map.
  const fields = input.fields ?? {};
  if (!isObject(fields)) throw new ProtoJsonError(path, `Struct.fields must be a map, got ${describe(fields)}`);
  const out: JsonObject = {};
  for (const key of Object.keys(fields)) put(out, key, valueToJson(fields[key], pointer(path, key)));
  return out;
}

export function listValueToJson(input: unknown, path = ''): JsonValue[] {
  if (!isObject(input)) throw new ProtoJsonError(path, `expected a google.protobuf.ListValue, got ${describe(input)}`);
  const values = input.values ?? [];
  if (!Array.isArray(values)) throw new ProtoJsonError(path, `ListValue.values must be a list, got ${describe(values)}`);
  return values.map((item, i) => valueToJson(item, pointer(path, i)));
}

// ------------------------------------------------------------------------------------------------
// Field names

/** The proto3 JSON name of a field: each underscore dropped and the next character upper-cased. */
export function snakeToCamel(name: string): string {
  return name.replace(/_+(.?)/g, (_, c: string) => c.toUpperCase());
}

/** The snake_case field name for a camelCase JSON member (the inverse of snakeToCamel for such names). */
export function camelToSnake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

// ------------------------------------------------------------------------------------------------
// Whole messages

type Kind = 'string' | 'bool' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'double' | 'enum' | 'struct' | 'value' | 'list' | 'message';

interface FieldPlan {
  name: string;
  jsonName: string;
  kind: Kind;
  repeated: boolean;
  /** Required in the JSON form: a plain scalar or a list the schema requires is written even at its default. */
  required: boolean;
  field: Field;
}

interface MessagePlan {
  type: Type;
  fields: FieldPlan[];
  byJsonName: Map<string, FieldPlan>;
  /** Names a decoded object may carry besides fields (oneof group names, when the loader adds them). */
  groups: Set<string>;
  additional?: FieldPlan;
}

const SCALARS: Record<string, Kind> = {
  string: 'string',
  bool: 'bool',
  double: 'double',
  float: 'double',
  int32: 'int32',
  sint32: 'int32',
  sfixed32: 'int32',
  uint32: 'uint32',
  fixed32: 'uint32',
  int64: 'int64',
  sint64: 'int64',
  sfixed64: 'int64',
  uint64: 'uint64',
  fixed64: 'uint64',
};

const WELL_KNOWN: Record<string, Kind> = {
  '.google.protobuf.Struct': 'struct',
  '.google.protobuf.Value': 'value',
  '.google.protobuf.ListValue': 'list',
};

const DEFAULTS: Partial<Record<Kind, JsonValue>> = { string: '', bool: false, int32: 0, uint32: 0, int64: 0, uint64: 0, double: 0 };

export interface ProtoJsonCodecOptions {
  /**
   * Per message type (full name, no leading dot), the fields the JSON body requires. proto3 cannot
   * tell an absent scalar or list from its default, so these are written at their default when
   * absent (0, false, "", []); the others are written only when present (scalars) or non-empty (lists).
   */
  required?: Readonly<Record<string, readonly string[]>>;
}

/**
 * Converts between a message in proto-loader's object form (`keepCase: true`, `defaults: false`)
 * and the REST JSON body it mirrors. toJson reads what a peer sent; fromJson builds what to send.
 */
export class ProtoJsonCodec {
  private readonly plans = new Map<string, MessagePlan>();

  constructor(
    private readonly root: Root,
    private readonly options: ProtoJsonCodecOptions = {},
  ) {
    const value = root.lookupType('google.protobuf.Value');
    const names = value.fieldsArray.map((f) => f.name);
    if (VALUE_KINDS.some((k) => !names.includes(k))) {
      throw new WiringFault(`google.protobuf.Value has fields ${names.join(', ')}; expected the bundled ones (${VALUE_KINDS.join(', ')})`);
    }
    for (const [typeName, fields] of Object.entries(options.required ?? {})) {
      const type = root.lookupType(typeName);
      for (const f of fields) if (!hasOwn(type.fields, f)) throw new WiringFault(`${typeName} has no field ${f} (listed as required)`);
    }
  }

  /** A message as the peer sent it → the REST JSON body. */
  toJson(typeName: string, message: unknown): JsonObject {
    return this.messageToJson(this.plan(typeName), message, '');
  }

  /** A REST JSON body → the message to send, in the object form proto-loader serializes. */
  fromJson(typeName: string, json: unknown): Record<string, unknown> {
    return this.messageFromJson(this.plan(typeName), json, '');
  }

  private plan(typeName: string): MessagePlan {
    const key = typeName.replace(/^\./, '');
    const known = this.plans.get(key);
    if (known) return known;
    const type = this.root.lookupType(key);
    type.resolveAll();
    const required = new Set(this.options.required?.[key] ?? []);
    const plan: MessagePlan = { type, fields: [], byJsonName: new Map(), groups: new Set(type.oneofsArray.map((o) => o.name)) };
    for (const field of type.fieldsArray) {
      if (field.map) throw new WiringFault(`${key}.${field.name}: map fields are not supported`);
      const fp: FieldPlan = {
        name: field.name,
        jsonName: typeof field.options?.json_name === 'string' ? field.options.json_name : snakeToCamel(field.name),
        kind: kindOf(key, field),
        repeated: field.repeated,
        required: required.has(field.name),
        field,
      };
      if (field.name === ADDITIONAL_PROPERTIES_FIELD) {
        if (fp.kind !== 'struct' || fp.repeated) throw new WiringFault(`${key}.${ADDITIONAL_PROPERTIES_FIELD} must be a single google.protobuf.Struct`);
        plan.additional = fp;
        continue;
      }
      if (plan.byJsonName.has(fp.jsonName)) throw new WiringFault(`${key}: two fields have the JSON name ${fp.jsonName}`);
      plan.fields.push(fp);
      plan.byJsonName.set(fp.jsonName, fp);
    }
    this.plans.set(key, plan);
    return plan;
  }

  private messageToJson(plan: MessagePlan, message: unknown, path: string): JsonObject {
    if (!isObject(message)) throw new ProtoJsonError(path, `expected a ${plan.type.name} message, got ${describe(message)}`);
    for (const key of Object.keys(message)) {
      if (!hasOwn(plan.type.fields, key) && !plan.groups.has(key) && message[key] !== undefined) throw new ProtoJsonError(path, `${plan.type.name} has no field ${key}`);
    }
    const out: JsonObject = {};
    for (const fp of plan.fields) {
      const at = pointer(path, fp.jsonName);
      const raw = message[fp.name];
      const absent = raw === undefined || raw === null;
      if (fp.repeated) {
        if (!absent && !Array.isArray(raw)) throw new ProtoJsonError(at, `${fp.name} must be a list, got ${describe(raw)}`);
        const items = absent ? [] : (raw as unknown[]);
        if (items.length || fp.required) out[fp.jsonName] = items.map((item, i) => this.fieldToJson(fp, item, pointer(at, i)));
        continue;
      }
      if (!absent) out[fp.jsonName] = this.fieldToJson(fp, raw, at);
      else if (fp.required && fp.kind in DEFAULTS) out[fp.jsonName] = DEFAULTS[fp.kind] as JsonValue;
      else if (fp.required && fp.kind === 'enum') out[fp.jsonName] = (fp.field.resolvedType as Enum).valuesById[0] ?? 0;
    }
    const extra = plan.additional ? message[plan.additional.name] : undefined;
    if (extra !== undefined && extra !== null) {
      const members = structToJson(extra, path);
      for (const key of Object.keys(members)) {
        if (plan.byJsonName.has(key)) throw new ProtoJsonError(pointer(path, key), `${ADDITIONAL_PROPERTIES_FIELD} repeats ${key}, which ${plan.type.name} declares`);
        put(out, key, members[key]);
      }
    }
    return out;
  }

  private fieldToJson(fp: FieldPlan, v: unknown, path: string): JsonValue {
    switch (fp.kind) {
      case 'string':
        if (typeof v !== 'string') throw new ProtoJsonError(path, `${fp.name} must be a string, got ${describe(v)}`);
        return v;
      case 'bool':
        if (typeof v !== 'boolean') throw new ProtoJsonError(path, `${fp.name} must be a boolean, got ${describe(v)}`);
        return v;
      case 'double':
        if (typeof v !== 'number' || !Number.isFinite(v)) throw new ProtoJsonError(path, `${fp.name} must be a finite number, got ${describe(v)}`);
        return v;
      case 'int32':
      case 'uint32':
      case 'int64':
      case 'uint64':
        return integerToJson(fp, v, path);
      case 'enum': {
        const e = fp.field.resolvedType as Enum;
        if (typeof v === 'string' && v in e.values) return v;
        if (typeof v === 'number' && e.valuesById[v] !== undefined) return e.valuesById[v];
        throw new ProtoJsonError(path, `${describe(v)} is not a value of ${e.name}`);
      }
      case 'struct':
        return structToJson(v, path);
      case 'value':
        return valueToJson(v, path);
      case 'list':
        return listValueToJson(v, path);
      case 'message':
        return this.messageToJson(this.plan((fp.field.resolvedType as Type).fullName), v, path);
    }
  }

  private messageFromJson(plan: MessagePlan, json: unknown, path: string): Record<string, unknown> {
    const body = jsonForm(json);
    if (!isObject(body)) throw new ProtoJsonError(path, `expected a JSON object for ${plan.type.name}, got ${describe(body)}`);
    const out: Record<string, unknown> = {};
    const extra: Record<string, unknown> = {};
    let hasExtra = false;
    for (const key of Object.keys(body)) {
      const v = body[key];
      if (skippedByJson(v)) continue;
      const at = pointer(path, key);
      const fp = plan.byJsonName.get(key);
      if (!fp) {
        if (!plan.additional) throw new ProtoJsonError(at, `${plan.type.name} has no member ${key}`);
        put(extra, key, v);
        hasExtra = true;
        continue;
      }
      if (fp.repeated) {
        const list = jsonForm(v);
        if (!Array.isArray(list)) throw new ProtoJsonError(at, `${key} must be an array, got ${describe(list)}`);
        out[fp.name] = list.map((item, i) => this.fieldFromJson(fp, item, pointer(at, i)));
      } else {
        out[fp.name] = this.fieldFromJson(fp, v, at);
      }
    }
    if (hasExtra && plan.additional) out[plan.additional.name] = jsonToStruct(extra, path);
    return out;
  }

  private fieldFromJson(fp: FieldPlan, input: unknown, path: string): unknown {
    if (fp.kind === 'value') return jsonToValue(input, path);
    const v = jsonForm(input);
    if (v === null || v === undefined) throw new ProtoJsonError(path, `null is not a value for ${fp.name} (${kindName(fp)})`);
    switch (fp.kind) {
      case 'string':
        if (typeof v !== 'string') throw new ProtoJsonError(path, `must be a string, got ${describe(v)}`);
        return v;
      case 'bool':
        if (typeof v !== 'boolean') throw new ProtoJsonError(path, `must be a boolean, got ${describe(v)}`);
        return v;
      case 'double':
        if (typeof v !== 'number' || !Number.isFinite(v)) throw new ProtoJsonError(path, `must be a finite number, got ${describe(v)}`);
        return v;
      case 'int32':
      case 'uint32':
      case 'int64':
      case 'uint64':
        if (typeof v !== 'number' || !Number.isInteger(v) || !integerFits(fp.kind, v)) throw new ProtoJsonError(path, `must be an integer that fits ${fp.field.type}, got ${describe(v)}`);
        return v;
      case 'enum':
        if (typeof v !== 'string' || !(v in (fp.field.resolvedType as Enum).values)) throw new ProtoJsonError(path, `${describe(v)} is not a value of ${(fp.field.resolvedType as Enum).name}`);
        return v;
      case 'struct':
        return jsonToStruct(v, path);
      case 'list':
        return jsonToListValue(v, path);
      case 'message':
        return this.messageFromJson(this.plan((fp.field.resolvedType as Type).fullName), v, path);
    }
  }
}

function kindOf(typeName: string, field: Field): Kind {
  const resolved = field.resolvedType;
  // A codec exists only over a loaded proto, so protobufjs is loaded by now.
  const { Enum, Type } = require('protobufjs') as typeof import('protobufjs');
  if (resolved instanceof Enum) return 'enum';
  if (resolved instanceof Type) {
    const wellKnown = WELL_KNOWN[resolved.fullName];
    if (wellKnown) return wellKnown;
    if (resolved.fullName.startsWith('.google.protobuf.')) throw new WiringFault(`${typeName}.${field.name}: ${resolved.fullName} has no JSON mapping here`);
    return 'message';
  }
  const scalar = SCALARS[field.type];
  if (!scalar) throw new WiringFault(`${typeName}.${field.name}: fields of type ${field.type} are not supported`);
  return scalar;
}

function kindName(fp: FieldPlan): string {
  return fp.kind === 'message' ? (fp.field.resolvedType as Type).name : fp.field.type;
}

function integerFits(kind: Kind, v: number): boolean {
  switch (kind) {
    case 'int32':
      return v >= -0x80000000 && v <= 0x7fffffff;
    case 'uint32':
      return v >= 0 && v <= 0xffffffff;
    case 'uint64':
      return v >= 0 && Number.isSafeInteger(v);
    default:
      return Number.isSafeInteger(v);
  }
}

/** An integer as proto-loader yields it (number, decimal string with `longs: String`, or a Long) → a JSON number. */
function integerToJson(fp: FieldPlan, v: unknown, path: string): number {
  let n: number;
  if (typeof v === 'number') n = v;
  else if (typeof v === 'string' && /^-?\d+$/.test(v)) n = Number(v);
  else if (isObject(v) && typeof v.low === 'number' && typeof v.high === 'number') n = (v.unsigned ? v.high >>> 0 : v.high) * 0x100000000 + (v.low >>> 0);
  else throw new ProtoJsonError(path, `${fp.name} must be an integer, got ${describe(v)}`);
  if (!Number.isInteger(n) || !integerFits(fp.kind, n)) throw new ProtoJsonError(path, `${fp.name} is ${String(v)}, which a JSON number cannot carry exactly`);
  return n;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${String(v)}`;
}
