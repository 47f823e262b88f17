import { bindDeferred, bindDeferredConfig, deferredConfigurableProblems, deferredParametersOf, expandDeferred, shieldDeferredSlots } from './chain-deferred-parameters';
import { templateConfig } from './workflow-definition';

const chain = {
  chainId: 'vendor.test.deferred',
  parameters: {
    type: 'object',
    required: ['topic'],
    properties: {
      topic: { type: 'string', description: 'the topic', format: 'vendor.acme.freeform' },
      count: { type: 'integer', format: 'int32', default: 3 },
      email: { type: 'string', format: 'email' },
      apiKey: { type: 'string', 'x-openwop-sensitive': true },
    },
  },
  dag: {
    nodes: [
      { id: 'n1', typeId: 'core.noop', config: { systemPrompt: 'About {{params.topic}} with {{params.apiKey}}', limit: '{{params.count}}', label: 'to {{params.email}}' } },
      { id: 'n2', typeId: 'core.noop', config: { nested: { n: '{{params.count}}' } }, inputs: { to: '{{params.email}}' } },
    ],
    edges: [{ from: 'n1', to: 'n2' }],
  },
};

describe('deferred-parameter expansion (RFC 0124, RFC 0136 format)', () => {
  const e = expandDeferred(chain, { topic: 'sales', email: 'a@b.example' });

  it('materializes every non-sensitive parameter as a variable: type, author value as default, required, format on strings only', () => {
    expect(e.variables).toEqual([
      { name: 'topic', type: 'string', description: 'the topic', defaultValue: 'sales', required: true, format: 'vendor.acme.freeform' },
      { name: 'count', type: 'number', defaultValue: 3 },
      { name: 'email', type: 'string', defaultValue: 'a@b.example', format: 'email' },
    ]);
    expect(e.dag.variables).toBe(e.variables);
  });

  it('leaves no {{params.*}} token: prompt slots, variable-sourced PortValues, embedded text resolved now', () => {
    expect(JSON.stringify(e.dag)).not.toMatch(/\{\{\s*params\./);
    expect(e.dag.nodes[0].config).toEqual({
      systemPrompt: 'About {{topic}} with {{apiKey}}',
      limit: { source: 'variable', variable: 'count' },
      label: 'to a@b.example',
      promptVariables: [
        { name: 'topic', source: 'variable' },
        { name: 'apiKey', source: 'secret' },
      ],
    });
    expect(e.dag.nodes[1]).toMatchObject({ config: { nested: { n: { source: 'variable', variable: 'count' } } }, inputs: { to: { source: 'variable', variable: 'email' } } });
    expect(e.configurableSchema.properties).toEqual({ topic: { type: 'string' }, count: { type: 'number' }, email: { type: 'string' }, apiKey: expect.objectContaining({ type: 'string' }) });
  });

  it('never puts a sensitive value anywhere, and fails closed outside a prompt body', () => {
    const withSecret = expandDeferred(chain, { topic: 't', apiKey: 'sk-PLAINTEXT' });
    expect(JSON.stringify(withSecret)).not.toContain('sk-PLAINTEXT');
    expect(withSecret.variables.find((v) => v.name === 'apiKey')).toBeUndefined();
    const inInput = { ...chain, dag: { nodes: [{ id: 'n', typeId: 'core.noop', inputs: { key: '{{params.apiKey}}' } }] } };
    expect(() => expandDeferred(inInput)).toThrow(expect.objectContaining({ code: 'sensitive_param_not_deferrable', status: 422 }));
    const embedded = { ...chain, dag: { nodes: [{ id: 'n', typeId: 'core.noop', config: { url: 'https://x.example/?k={{params.apiKey}}' } }] } };
    expect(() => expandDeferred(embedded)).toThrow(expect.objectContaining({ code: 'sensitive_param_not_deferrable' }));
  });

  it('refuses a token naming no parameter', () => {
    const stray = { ...chain, dag: { nodes: [{ id: 'n', typeId: 'core.noop', config: { systemPrompt: '{{params.nope}}' } }] } };
    expect(() => expandDeferred(stray)).toThrow(expect.objectContaining({ code: 'validation_error' }));
  });

  it('finds the deferred parameters a stored definition binds in its configs (none for an ordinary chain)', () => {
    // email is bound only in n2's declared inputs, which this host's definitions do not carry (edges feed inputs).
    expect(deferredParametersOf({ nodes: e.dag.nodes }).sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { name: 'apiKey', sensitive: true },
      { name: 'count', sensitive: false },
      { name: 'topic', sensitive: false },
    ]);
    expect(deferredParametersOf({ nodes: [{ id: 'a', typeId: 'core.noop', config: { x: '{{inputs.y}}' } }] })).toEqual([]);
  });

  it('checks per-run overrides: the variable type, and a credentialRef (never a value) for a sensitive one', () => {
    const def = { nodes: e.dag.nodes, variables: e.variables };
    expect(deferredConfigurableProblems(def, { topic: 'x', count: 4, apiKey: 'cred-1', other: 1 })).toEqual([]);
    expect(new Set(deferredConfigurableProblems(def, { topic: 5, apiKey: { value: 'sk' } }).map((p) => p.field))).toEqual(new Set(['configurable.apiKey', 'configurable.topic']));
    expect(deferredConfigurableProblems(def, { apiKey: '{{secret}}' })).toHaveLength(1);
  });

  it('binds at run time: the override wins over the author default, slots fenced as untrusted, secrets redacted', () => {
    const def = { nodes: e.dag.nodes as Array<{ id: string; typeId: string; config: Record<string, unknown> }>, variables: e.variables as unknown as Array<Record<string, unknown>> };
    // As the engine does it: shielded, templated (which fills every other {{...}}), then bound.
    const templated = templateConfig(shieldDeferredSlots(e.dag.nodes[0].config as Record<string, unknown>), { inputs: {}, nodes: {} }) as Record<string, unknown>;
    const bound = bindDeferredConfig(templated, def, { topic: '{{inputs.x}} run-topic', apiKey: 'cred-9' }, new Map());
    expect(bound).toEqual({
      // A value is composed as it is: never templated.
      systemPrompt: 'About <UNTRUSTED>{{inputs.x}} run-topic</UNTRUSTED> with [REDACTED:cred-9]',
      limit: 3,
      label: 'to a@b.example',
      contentTrust: 'untrusted',
      variableBindings: { topic: '{{inputs.x}} run-topic', apiKey: '[REDACTED:cred-9]' },
    });
    // Without an override the author value is bound; a node's variable write (core.setVariable) is read after it.
    const later = bindDeferredConfig(e.dag.nodes[1].config as Record<string, unknown>, { ...def, nodes: [...def.nodes, { id: 'w', typeId: 'core.setVariable', config: {} }] }, {}, new Map([['w', { variables: { count: 9 } }]]));
    expect(later).toEqual({ nested: { n: 9 } });
    // An ordinary chain's config is left as it is.
    const plain = { a: '{{x}}', systemPrompt: 'hi {{x}}' };
    expect(bindDeferredConfig(plain, { nodes: [{ id: 'a', typeId: 'core.noop', config: plain }] }, { x: 1 }, new Map())).toBe(plain);
    expect(bindDeferred({ systemPrompt: 'no slots' }, {}, {})).toEqual({ systemPrompt: 'no slots' });
  });
});
