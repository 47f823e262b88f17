import type { DiscoveryService } from '@nestjs/core';
import { GoalJudge, GoalJudgeProvider, GoalWorker, GoalWorkerProvider } from '@openwop-host/plugin-sdk';
import { GoalExtensionsService } from './goal-extensions.service';
import { HostSchemaJudge } from './judges/host-schema.judge';
import { RunEventVerifierJudge } from './judges/run-event-verifier.judge';

@GoalJudge({ check: 'verifier', id: 'acme.critic' })
class AcmeCritic implements GoalJudgeProvider {
  evaluate() {
    return { satisfied: true, confidence: 0.9 };
  }
}

@GoalJudge({ check: 'host' })
class StrictHostJudge implements GoalJudgeProvider {
  evaluate() {
    return { satisfied: false, confidence: 1 };
  }
}

@GoalWorker({ id: 'acme.ci' })
class CiWorker implements GoalWorkerProvider {
  configured = false;
  available() {
    return this.configured;
  }
  async start() {
    return { runId: 'r' };
  }
  async collect() {
    return undefined;
  }
}

function service(instances: object[]): GoalExtensionsService {
  const wrappers = instances.map((instance) => ({ instance, metatype: instance.constructor }));
  const s = new GoalExtensionsService({ getProviders: () => wrappers } as unknown as DiscoveryService);
  s.onApplicationBootstrap();
  return s;
}

describe('GoalExtensionsService', () => {
  const hostJudge = new HostSchemaJudge();
  const verifier = new RunEventVerifierJudge({} as never);

  it('serves the built-in judges by check', () => {
    const s = service([hostJudge, verifier]);
    expect(s.judgeFor('host')).toBe(hostJudge);
    expect(s.judgeFor('verifier', 'anyone')).toBe(verifier);
    expect(s.servesJudge('host')).toBe(true);
  });

  it('uses a verifier plugin for the goals that name it, and a plugin default judge over the built-in one', () => {
    const critic = new AcmeCritic();
    const strict = new StrictHostJudge();
    const s = service([strict, hostJudge, verifier, critic]);
    expect(s.judgeFor('verifier', 'acme.critic')).toBe(critic);
    expect(s.judgeFor('verifier', 'other')).toBe(verifier);
    expect(s.judgeFor('verifier', null)).toBe(verifier);
    expect(s.judgeFor('host')).toBe(strict);
  });

  it('offers only available workers and refuses two workers with one id', () => {
    const ci = new CiWorker();
    const s = service([ci]);
    expect(s.worker('acme.ci')).toBeUndefined();
    expect(s.availableWorkerIds()).toEqual([]);
    ci.configured = true;
    expect(s.worker('acme.ci')).toBe(ci);
    expect(s.availableWorkerIds()).toEqual(['acme.ci']);
    expect(() => s.registerWorker('acme.ci', ci)).toThrow(/two goal workers/);
    expect(s.worker(null)).toBeUndefined();
  });
});
