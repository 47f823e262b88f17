import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { GoalJudge, GoalJudgeProvider, GoalWorker, GoalWorkerProvider } from '@openwop-host/plugin-sdk';
import { collectExtensions, ExtensionMeta } from '../../platform/plugins/extension-registry';
import type { GoalCheck } from './goal.entity';
import { HostSchemaJudge } from './judges/host-schema.judge';
import { RunEventVerifierJudge } from './judges/run-event-verifier.judge';
import { WiringFault } from '../../platform/errors/internal-fault';

/**
 * The goal judges and goal workers of the host: the built-in ones and those plugins contribute
 * through the `goal-judge` / `goal-worker` extension points (collected by the extension registry,
 * like every other extension point). Workers may also be registered programmatically.
 */
@Injectable()
export class GoalExtensionsService implements OnApplicationBootstrap {
  private readonly defaultJudges = new Map<GoalCheck, GoalJudgeProvider>();
  private readonly namedVerifiers = new Map<string, GoalJudgeProvider>();
  private readonly workers = new Map<string, GoalWorkerProvider>();

  constructor(private readonly discovery: DiscoveryService) {}

  onApplicationBootstrap(): void {
    const builtIn = new Set<unknown>([HostSchemaJudge, RunEventVerifierJudge]);
    const pluginDefaults = new Map<GoalCheck, GoalJudgeProvider>();
    // One key per role: a named verifier, the built-in judge of a check, a plugin's default judge of a check.
    const judges = collectExtensions<ExtensionMeta<typeof GoalJudge>, GoalJudgeProvider>(this.discovery, {
      name: 'goal judge',
      metadataKey: GoalJudge.key,
      key: (judge, instance) => (judge.check === 'verifier' && judge.id ? `verifier:${judge.id}` : builtIn.has(instance.constructor) ? `built-in:${judge.check}` : `plugin-default:${judge.check}`),
    });
    for (const { key, meta: judge, provider } of judges) {
      if (key.startsWith('verifier:')) this.namedVerifiers.set(judge.id!, provider);
      else if (key.startsWith('built-in:')) this.defaultJudges.set(judge.check, provider);
      else pluginDefaults.set(judge.check, provider);
    }
    const workers = collectExtensions<ExtensionMeta<typeof GoalWorker>, GoalWorkerProvider>(this.discovery, { name: 'goal worker', metadataKey: GoalWorker.key, key: (worker) => worker.id });
    for (const { meta, provider } of workers) this.registerWorker(meta.id, provider);
    // A plugin's default judge for a check replaces the built-in one.
    for (const [check, judge] of pluginDefaults) this.defaultJudges.set(check, judge);
  }

  /** The judge of a goal: a verifier plugin named by `verifierRef`, else the judge of its check. */
  judgeFor(check: GoalCheck, verifierRef?: string | null): GoalJudgeProvider | undefined {
    if (check === 'verifier' && verifierRef) {
      const named = this.namedVerifiers.get(verifierRef);
      if (named) return named;
    }
    return this.defaultJudges.get(check);
  }

  servesJudge(check: GoalCheck): boolean {
    return this.defaultJudges.has(check);
  }

  registerWorker(id: string, worker: GoalWorkerProvider): void {
    if (this.workers.has(id)) throw new WiringFault(`two goal workers claim id "${id}"`);
    this.workers.set(id, worker);
  }

  /** Removes a programmatically registered worker (tests, plugins that unload). */
  unregisterWorker(id: string): void {
    this.workers.delete(id);
  }

  /** A worker that can serve goals now. */
  worker(id: string | null | undefined): GoalWorkerProvider | undefined {
    if (!id) return undefined;
    const w = this.workers.get(id);
    if (!w) return undefined;
    return typeof w.available === 'function' && !w.available() ? undefined : w;
  }

  availableWorkerIds(): string[] {
    return [...this.workers.keys()].filter((id) => this.worker(id)).sort();
  }
}
