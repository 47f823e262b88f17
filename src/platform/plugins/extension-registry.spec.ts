import 'reflect-metadata';
import { defineExtensionPoint } from '@openwop-host/plugin-sdk';
import { collectFrom, ExtensionContribution, ExtensionPointError, ExtensionPointSpec } from './extension-registry';

interface Meta {
  id: string;
}
interface Thing {
  run?: () => void;
}

const Point = defineExtensionPoint<Meta>('test-thing');

function provider(name: string, meta: Meta | undefined, instance: Thing = { run: () => undefined }) {
  const type = { [name]: class {} }[name];
  if (meta) Point(meta)(type);
  return { name, metatype: type, instance } as never;
}

const spec: ExtensionPointSpec<Meta, Thing> = {
  name: 'test thing',
  metadataKey: Point.key,
  key: (m) => m.id,
  validate: (_m, p) => (typeof p.run === 'function' ? undefined : 'has no run()'),
};

describe('collectFrom (the extension registry)', () => {
  it('collects only the providers carrying the extension point', () => {
    const found = collectFrom([provider('A', { id: 'a' }), provider('Plain', undefined)], spec);
    expect(found.map((c) => [c.key, c.providerName])).toEqual([['a', 'A']]);
  });

  it('refuses a duplicate key at start, naming both providers', () => {
    expect(() => collectFrom([provider('First', { id: 'x' }), provider('Second', { id: 'x' })], spec)).toThrow(new ExtensionPointError('two test things claim "x": First and Second'));
  });

  it('refuses an unusable contribution, naming the provider and the problem', () => {
    expect(() => collectFrom([provider('Broken', { id: 'b' }, {})], spec)).toThrow(new ExtensionPointError('test thing Broken: has no run()'));
  });

  it('with invalid: skip, leaves only the unusable contribution out and reports it', () => {
    const skipped: Array<[string, string]> = [];
    const found = collectFrom([provider('Broken', { id: 'b' }, {}), provider('Good', { id: 'g' })], {
      ...spec,
      invalid: 'skip',
      onSkip: (problem, c: ExtensionContribution<Meta, Thing>) => skipped.push([c.providerName, problem]),
    });
    expect(found.map((c) => c.key)).toEqual(['g']);
    expect(skipped).toEqual([['Broken', 'has no run()']]);
  });

  it('orders contributions by key, whatever order the modules were mounted in', () => {
    const a = [provider('C', { id: 'c' }), provider('A', { id: 'a' }), provider('B', { id: 'b' })];
    const keys = (w: never[]) => collectFrom(w, spec).map((c) => c.key);
    expect(keys(a)).toEqual(['a', 'b', 'c']);
    expect(keys([...a].reverse())).toEqual(['a', 'b', 'c']);
  });

  it('skips wrappers without an instance (a request-scoped or unresolved provider)', () => {
    const w = provider('Lazy', { id: 'l' });
    (w as { instance: unknown }).instance = undefined;
    expect(collectFrom([w], spec)).toEqual([]);
  });
});
