import { NODE_ID_LEFT_OUT, readForm, storedForm } from './event-codes';

describe('event codes', () => {
  it('stores an engine type as its code, and a node event without its leading nodeId; reads both back as written', () => {
    const payload = { nodeId: 'n1', typeId: 'core.noop', attempt: 0 };
    const s = storedForm('node.started', payload, 'n1');
    expect(s).toEqual({ code: 7 | NODE_ID_LEFT_OUT, type: null, payload: { typeId: 'core.noop', attempt: 0 } });
    const back = readForm(s.code, s.type, s.payload, 'n1');
    expect(back.type).toBe('node.started');
    expect(JSON.stringify(back.payload)).toBe(JSON.stringify(payload));
  });

  it('keeps the payload whole when its nodeId is not first, not the envelope\'s, or the type has no code', () => {
    expect(storedForm('node.completed', { z: 1, nodeId: 'n1' }, 'n1')).toEqual({ code: 8, type: null, payload: { z: 1, nodeId: 'n1' } });
    expect(storedForm('node.completed', { nodeId: 'n2' }, 'n1')).toEqual({ code: 8, type: null, payload: { nodeId: 'n2' } });
    expect(storedForm('node.completed', { nodeId: 'n1' }, null)).toEqual({ code: 8, type: null, payload: { nodeId: 'n1' } });
    expect(storedForm('agent.toolCalled', { nodeId: 'n1' }, 'n1')).toEqual({ code: 0, type: 'agent.toolCalled', payload: { nodeId: 'n1' } });
    expect(readForm(0, 'agent.toolCalled', { nodeId: 'n1' }, 'n1')).toEqual({ type: 'agent.toolCalled', payload: { nodeId: 'n1' } });
    expect(readForm('2', null, {}, null)).toEqual({ type: 'run.completed', payload: {} });
  });

  it('refuses a code it does not know', () => {
    expect(() => readForm(99, null, {}, null)).toThrow(/unknown type code 99/);
  });
});
