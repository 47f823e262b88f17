import { toV2Event, v2EventType } from '../events/v2-events';
import { legacySubject, subjectOf } from '../identity/subject';
import { flattenV2Configurable, nestConfigurable, toV2Snapshot } from './v2-run-rendering';

const ID = '5d6f3c1e-0000-4000-8000-000000000001';
const subject = subjectOf({ tenant: 'acme', principal: 'alice', kind: 'api-key' });

describe('v2 run rendering', () => {
  it('the closed v2 configurable: validated, flattened for the v1 handler, nested back', () => {
    const v2 = { version: 1, run: { maxLoopIterations: 5, runTimeoutMs: 1000 }, ai: { model: 'm', temperature: 0.5 }, distillation: { tokenBudget: 10 }, extensions: { acme: { x: 1 } } };
    const flat = flattenV2Configurable(v2);
    expect(flat).toEqual({ maxLoopIterations: 5, runTimeoutMs: 1000, model: 'm', temperature: 0.5, distillationTokenBudget: 10, extensions: { acme: { x: 1 } } });
    expect(nestConfigurable(flat)).toEqual(v2);
    // A v1 key v2 has no seat for stays visible under the host's extension.
    expect(nestConfigurable({ recursionLimit: 3, custom: true })).toEqual({ version: 1, run: { recursionLimit: 3 }, extensions: { 'openwop-host': { custom: true } } });
    for (const bad of [{}, { version: 2 }, { version: 1, unknownKey: 1 }, { version: 1, ai: { 'ai.provider': 'x' } }, { version: 1, ai: { temperature: 3 } }, { version: 1, run: 5 }, { version: 1, extensions: { 'Bad Org': {} } }, [], 'x']) {
      expect(() => flattenV2Configurable(bad)).toThrow(expect.objectContaining({ code: 'validation_error', status: 400 }));
    }
  });

  it('a v1 snapshot as the closed v2 one: owner with the subject, what v2 has no seat for under the host extension', () => {
    const v1 = {
      runId: ID, workflowId: 'w', status: 'completed', owner: { tenant: 'acme', principal: 'alice' }, eventLogSchemaVersion: 3,
      configurable: { maxLoopIterations: 2 }, outputs: { a: 1 }, metrics: { nodeExecutions: 2, openwopCost: { usd: 0 } },
      fork: { sourceRunId: 'src-run-0000000000001', mode: 'replay', fromSeq: 1 }, eventsUrl: '/runs/x/events',
    };
    expect(toV2Snapshot(v1, subject)).toEqual({
      runId: ID, workflowId: 'w', status: 'completed', owner: { tenant: 'acme', subject }, eventLogSchemaVersion: 3,
      configurable: { version: 1, run: { maxLoopIterations: 2 } }, metrics: { openwopCost: { usd: 0 } }, parentRunId: 'src-run-0000000000001',
      extensions: { 'openwop-host.run': { outputs: { a: 1 }, fork: v1.fork, metrics: { nodeExecutions: 2 } } },
      eventsUrl: '/runs/x/events',
    });
    expect(legacySubject('acme', undefined)).toEqual({ issuer: 'urn:openwop:legacy', subjectId: 'unknown', tenant: 'acme', lane: 'workload', kind: 'workload' });
  });

  it('events: codemap types, sequences from 0, schemaVersion, closed payloads, bound ids; unmapped types refused', () => {
    const owner = { tenant: 'acme', subject };
    const e = (type: string, payload: Record<string, unknown>, sequence = 1) => ({ eventId: 'e-00000000000000001', runId: ID, type, payload, timestamp: '2026-01-01T00:00:00.000Z', sequence, correlationId: 'c' });
    expect(toV2Event(e('run.started', { workflowId: 'w', owner: { tenant: 'acme', principal: 'alice' }, extra: 1 }), { tenant: 'acme', owner })).toEqual({
      eventId: 'e-00000000000000001', runId: `acme/${ID}`, type: 'run.started', payload: { workflowId: 'w', owner, 'x-extra': 1 }, timestamp: '2026-01-01T00:00:00.000Z', sequence: 0, schemaVersion: 1,
    });
    expect(toV2Event(e('agent.toolCalled', {}, 3), { tenant: 'acme', owner })).toEqual(expect.objectContaining({ type: 'agent.tool-called', sequence: 2 }));
    // A tenant-bound id a payload def types as such is bound; other payload values are the workflow's.
    expect(toV2Event(e('node.suspended', { nodeId: 'n', interruptId: 'i-0000000000000001' }), { tenant: 'acme', owner }).payload).toEqual({ nodeId: 'n', interruptId: 'acme/i-0000000000000001' });
    expect(v2EventType('example.thing-happened')).toBe('example.thing-happened');
    expect(() => v2EventType('made.up')).toThrow(expect.objectContaining({ code: 'event_type_unmapped', status: 500 }));
  });
});
