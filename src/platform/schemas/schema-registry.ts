import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv2020, { ErrorObject, ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { PROJECT_ROOT } from '../project-root';
import { WiringFault } from '../errors/internal-fault';

export interface SchemaViolation {
  /** JSON Pointer of the offending value ('' is the document itself). */
  path: string;
  message: string;
  keyword: string;
}

export const SCHEMAS_ROOT = path.join(PROJECT_ROOT, 'schemas');

/**
 * The JSON Schemas the host validates with: the protocol's published v1 schemas (schemas/openwop/)
 * and the host's own (schemas/*.schema.json). Nothing is read at start: the shipped files are read
 * and registered (with Ajv and its formats) when the registry is first used, and each schema is
 * compiled on its first use, so a start that validates nothing does not pay for them (reading and
 * registering the 75 files was some 25 to 80 ms of a boot, by the machine's load).
 */
export class SchemaRegistry {
  private static instance?: SchemaRegistry;
  private built?: Ajv2020;
  private readonly ids = new Map<string, string>();
  private readonly compiled = new Map<string, ValidateFunction>();

  static shared(): SchemaRegistry {
    return (SchemaRegistry.instance ??= new SchemaRegistry());
  }

  constructor(private readonly root = SCHEMAS_ROOT) {}

  /** Ajv holding every shipped schema (registered first: a schema registered later under one of their ids does not replace it). */
  private load(): Ajv2020 {
    if (this.built) return this.built;
    // strict:false because the published schemas carry vendor keywords (x-openwop-*); formats are checked.
    const ajv = (this.built = new Ajv2020({ strict: false, allErrors: true, validateFormats: true }));
    addFormats(ajv);
    for (const dir of [path.join(this.root, 'openwop'), this.root]) {
      if (!fs.existsSync(dir)) continue;
      for (const file of fs.readdirSync(dir).sort()) {
        if (!file.endsWith('.schema.json')) continue;
        // The files the host ships are held to the meta-schema by schema-registry.spec.ts, not at every
        // start (validating the 75 of them was most of what building the registry cost a boot).
        this.add(ajv, file.replace(/\.schema\.json$/, ''), JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')), true);
      }
    }
    return ajv;
  }

  /** Registers a schema under a short name (also reachable by its $id for cross-references). */
  register(name: string, schema: Record<string, unknown>): void {
    this.add(this.load(), name, schema, false);
  }

  private add(ajv: Ajv2020, name: string, schema: Record<string, unknown>, shipped: boolean): void {
    const id = typeof schema.$id === 'string' ? schema.$id : `urn:openwop-host:${name}`;
    if (!ajv.getSchema(id)) ajv.addSchema(schema.$id ? schema : { ...schema, $id: id }, undefined, undefined, !shipped);
    this.ids.set(name, id);
    this.compiled.delete(name);
  }

  has(name: string): boolean {
    this.load();
    return this.ids.has(name);
  }

  validator(name: string): ValidateFunction {
    let fn = this.compiled.get(name);
    if (!fn) {
      const ajv = this.load();
      const id = this.ids.get(name);
      if (!id) throw new WiringFault(`unknown schema "${name}"`);
      fn = ajv.getSchema(id);
      if (!fn) throw new WiringFault(`schema "${name}" did not compile`);
      this.compiled.set(name, fn);
    }
    return fn;
  }

  /** Validates and returns the violations (empty when valid). */
  validate(name: string, value: unknown): SchemaViolation[] {
    const fn = this.validator(name);
    return fn(value) ? [] : toViolations(fn.errors ?? []);
  }

  /** Validates against a schema object that is not registered (for example a plugin's config schema). */
  validateWith(schema: Record<string, unknown>, value: unknown): SchemaViolation[] {
    const fn = this.load().compile(schema);
    return fn(value) ? [] : toViolations(fn.errors ?? []);
  }
}

export function toViolations(errors: ErrorObject[]): SchemaViolation[] {
  return errors.map((e) => ({
    path:
      e.keyword === 'required' && typeof (e.params as { missingProperty?: string }).missingProperty === 'string'
        ? `${e.instancePath}/${(e.params as { missingProperty: string }).missingProperty}`
        : e.keyword === 'additionalProperties'
          ? `${e.instancePath}/${(e.params as { additionalProperty: string }).additionalProperty}`
          : e.instancePath,
    message: e.message ?? 'is invalid',
    keyword: e.keyword,
  }));
}
