import { inputFields, inputsOf, problemsByField } from './input-form';

describe('console: the start form of a workflow', () => {
  const parameters = {
    type: 'object',
    required: ['version'],
    properties: {
      version: { type: 'string', title: 'Version', description: 'The release to publish', examples: ['2.4.0'] },
      count: { type: 'integer', default: 2 },
      dry: { type: 'boolean' },
      channel: { enum: ['stable', 'beta'] },
      extra: { type: 'object' },
    },
  };

  it('has one field per declared input, required ones marked, examples as placeholders', () => {
    const fields = inputFields(parameters);
    expect(fields.map((f) => [f.name, f.kind, f.required, f.example ?? null, f.initial])).toEqual([
      ['version', 'text', true, '2.4.0', ''],
      ['count', 'integer', false, '2', '2'],
      ['dry', 'boolean', false, null, 'false'],
      ['channel', 'choice', false, null, ''],
      ['extra', 'json', false, null, ''],
    ]);
    expect(fields[0]).toMatchObject({ label: 'Version', description: 'The release to publish' });
    expect(fields[3].choices).toEqual(['stable', 'beta']);
    expect(inputFields(null)).toEqual([]);
    expect(inputFields({ type: 'object' })).toEqual([]);
  });

  it('turns the values into inputs, leaving empty fields out and refusing what does not parse', () => {
    const fields = inputFields(parameters);
    expect(inputsOf(fields, { version: '2.4.0', extra: '{"a": [1]}' })).toEqual({ inputs: { version: '2.4.0', count: 2, dry: false, extra: { a: [1] } }, problems: {} });
    expect(inputsOf(fields, { count: 'many', extra: '{' })).toEqual({ inputs: { dry: false }, problems: { count: 'must be a number', extra: 'must be JSON' } });
  });

  it('puts the host\'s problems on the fields their paths name, the rest on the form', () => {
    const fields = inputFields(parameters);
    const details = {
      field: 'inputs',
      problems: [
        { path: '/inputs/version', message: "must have required property 'version'" },
        { path: '/inputs/extra/a', message: 'must be string' },
        { path: '/inputs/other', message: 'must NOT have additional properties' },
        { path: '/inputs', message: 'must be object' },
      ],
    };
    expect(problemsByField(fields, details)).toEqual({
      version: ["must have required property 'version'"],
      extra: ['a: must be string'],
      '': ['/inputs/other: must NOT have additional properties', '/inputs: must be object'],
    });
    expect(problemsByField(fields, undefined)).toEqual({});
  });
});
