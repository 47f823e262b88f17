import { SchemaRegistry } from '../../platform/schemas/schema-registry';
import { toGoalView } from './goal-view';
import type { GoalEntity } from './goal.entity';

const row = (over: Partial<GoalEntity> = {}): GoalEntity =>
  ({
    id: '0b0f3a52-86a4-4f3a-9d0e-0d6f3c1b2a11',
    tenant: 'acme',
    workspace: null,
    principal: 'alice',
    objective: 'keep the release checklist green',
    state: 'active',
    judge: 'host',
    verifierRef: null,
    criteria: { type: 'object', required: ['green'] },
    continuationMode: 'schedule',
    armRef: 'goal:0b0f3a52-86a4-4f3a-9d0e-0d6f3c1b2a11:continuation',
    schedule: { intervalMs: 60000 },
    worker: 'openwop-runtime',
    bounds: { maxLoopIterations: 7, runTimeoutMs: 600000, maxCostUsd: 5 },
    deadlineAt: null,
    iterations: 2,
    costUsd: 1.5,
    contributingRunIds: ['r1', 'r2'],
    lastVerdict: { satisfied: false, confidence: 1, runId: 'r2' },
    paused: true,
    nextDueAt: null,
    leaseOwner: 'replica-a',
    leaseExpiresAt: null,
    dispatchKey: null,
    pendingRunId: null,
    dispatchCount: 2,
    closedAt: null,
    createdAt: new Date('2026-06-13T00:00:00Z'),
    updatedAt: new Date('2026-06-13T00:01:00Z'),
    ...over,
  }) as GoalEntity;

describe('toGoalView', () => {
  const schemas = SchemaRegistry.shared();

  it('writes a Goal that validates against the closed goal.schema.json, without host-private fields', () => {
    const view = toGoalView(row());
    expect(schemas.validate('goal', view)).toEqual([]);
    const text = JSON.stringify(view);
    for (const key of ['criteria', 'leaseOwner', 'paused', 'dispatchKey', 'worker', 'schedule', 'costUsd']) expect(text).not.toContain(`"${key}":`);
    expect(text).not.toContain('replica-a');
    expect(view.progress).toEqual({ iterations: 2, contributingRunIds: ['r1', 'r2'] });
    expect(view.owner).toEqual({ tenant: 'acme', principal: 'alice' });
  });

  it('validates for every state, with a workspace, and before any verdict', () => {
    for (const state of ['active', 'satisfied', 'escalated', 'abandoned', 'bound-exceeded'] as const) {
      expect(schemas.validate('goal', toGoalView(row({ state, workspace: 'ws1', lastVerdict: null, contributingRunIds: [], iterations: 0 })))).toEqual([]);
    }
  });
});
