import { renderTemplate } from './template';

describe('console: renderTemplate', () => {
  it('renders paths of the context as the engine does', () => {
    expect(renderTemplate('Publish release {{inputs.version}}?', { inputs: { version: '2.4.0' } })).toBe('Publish release 2.4.0?');
    expect(renderTemplate('{{ inputs.n }} of {{inputs.list}}', { inputs: { n: 3, list: [1, 2] } })).toBe('3 of [1,2]');
  });

  it('leaves a path that does not resolve as written', () => {
    expect(renderTemplate('Publish release {{inputs.version}}?', { inputs: {} })).toBe('Publish release {{inputs.version}}?');
    expect(renderTemplate('{{inputs.a.b}}', { inputs: { a: 'x' } })).toBe('{{inputs.a.b}}');
    expect(renderTemplate('{{constructor}}', {})).toBe('{{constructor}}');
  });
});
