import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { SCHEMAS_ROOT, SchemaRegistry } from './schema-registry';

/**
 * The registry trusts the schema files the host ships (it does not validate them against the
 * meta-schema at every start): this holds each of them to it instead, and shows that a schema
 * registered from elsewhere (a plugin's) still is.
 */
describe('SchemaRegistry', () => {
  it('ships only schema files that are valid JSON Schema (draft 2020-12)', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    const files = [path.join(SCHEMAS_ROOT, 'openwop'), SCHEMAS_ROOT].flatMap((dir) =>
      fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.schema.json'))
        .map((f) => path.join(dir, f)),
    );
    expect(files.length).toBeGreaterThan(50);
    const invalid = files.filter((f) => !ajv.validateSchema(JSON.parse(fs.readFileSync(f, 'utf8')))).map((f) => `${path.relative(SCHEMAS_ROOT, f)}: ${ajv.errorsText(ajv.errors)}`);
    expect(invalid).toEqual([]);
    // Every one registers and compiles.
    const registry = new SchemaRegistry();
    for (const f of files) expect(typeof registry.validator(path.basename(f).replace(/\.schema\.json$/, ''))).toBe('function');
  });

  it('still refuses an invalid schema registered from elsewhere', () => {
    const registry = new SchemaRegistry();
    expect(() => registry.register('bogus', { $id: 'urn:test:bogus', type: 'bogus' })).toThrow(/schema is invalid/);
  });
});
