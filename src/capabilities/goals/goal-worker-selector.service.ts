import { Inject, Injectable } from '@nestjs/common';
import type { GoalWorkerProvider, GoalWorkTarget } from '@openwop-host/plugin-sdk';
import { UnprocessableError } from '../../platform/errors/domain-error';
import { GoalExtensionsService } from './goal-extensions.service';
import type { GoalContinuationMode, GoalEntity } from './goal.entity';
import { GOALS_SETTINGS, GoalsSettings } from './goals.settings';

/** The remote worker, preferred as the default when it is configured. */
const RUNTIME_WORKER = 'openwop-runtime';
/** The local run engine's worker, the default otherwise for a goal that names a workflow. */
const LOCAL_WORKER = 'local-run';

/**
 * The one place that chooses which goal worker serves a goal. Workers are providers of the
 * `goal-worker` extension point (the built-in `openwop-runtime`, a plugin's, or any module's
 * `@GoalWorker` provider); a goal stores the id of the one it chose, and each tick the scheduler asks
 * for that provider by id. Which modes a worker serves follows from what it implements: every worker
 * serves `schedule` and `commitment`, a worker with `probe` also `heartbeat`; a worker may refuse a
 * particular goal (`accepts`).
 */
@Injectable()
export class GoalWorkerSelector {
  constructor(
    private readonly extensions: GoalExtensionsService,
    @Inject(GOALS_SETTINGS) private readonly settings: GoalsSettings,
  ) {}

  /** The continuation modes served now (what agents.goals.continuation advertises), in schema order. */
  servedModes(): GoalContinuationMode[] {
    const modes: GoalContinuationMode[] = [];
    if (this.workersFor('schedule').length) modes.push('schedule', 'commitment');
    if (this.workersFor('heartbeat').length) modes.push('heartbeat');
    modes.push('manual');
    return modes;
  }

  /** The available workers that can serve a mode. */
  workersFor(mode: GoalContinuationMode): string[] {
    return this.extensions.availableWorkerIds().filter((id) => serves(this.extensions.worker(id), mode));
  }

  /**
   * The worker a goal gets: the one it names, else `goals.defaultWorker`, else `openwop-runtime`
   * when configured, else `local-run` (the host's own run engine) when the goal names a workflow,
   * else the only other available worker that serves the mode. 422 when none fits.
   */
  choose(mode: Exclude<GoalContinuationMode, 'manual'>, requested: string | undefined, target: Omit<GoalWorkTarget, 'mode'>): string {
    const candidates = this.workersFor(mode);
    const id = requested ?? this.defaultFor(candidates, { ...target, mode });
    const worker = id ? this.extensions.worker(id) : undefined;
    if (!id || !worker || !serves(worker, mode)) {
      throw new UnprocessableError(
        'worker_unavailable',
        requested ? `No goal worker "${requested}" is available for ${mode} continuation.` : `No goal worker is available for ${mode} continuation.`,
        { worker: requested ?? null, available: candidates },
      );
    }
    const refusal = typeof worker.accepts === 'function' ? worker.accepts({ ...target, mode }) : undefined;
    if (refusal) throw new UnprocessableError('worker_rejected', `The goal worker "${id}" cannot serve this goal: ${refusal}`, { worker: id });
    return id;
  }

  /** The provider serving a goal now (undefined when its worker is gone or unavailable). */
  workerOf(goal: Pick<GoalEntity, 'worker'>): GoalWorkerProvider | undefined {
    return this.extensions.worker(goal.worker);
  }

  private defaultFor(candidates: string[], target: GoalWorkTarget): string | undefined {
    if (this.settings.defaultWorker) return candidates.includes(this.settings.defaultWorker) ? this.settings.defaultWorker : undefined;
    if (candidates.includes(RUNTIME_WORKER)) return RUNTIME_WORKER;
    if (!candidates.includes(LOCAL_WORKER)) return candidates.length === 1 ? candidates[0] : undefined;
    const local = this.extensions.worker(LOCAL_WORKER);
    const refusal = typeof local?.accepts === 'function' ? local.accepts(target) : undefined;
    if (!refusal) return LOCAL_WORKER;
    // The local worker cannot serve this goal (it names no workflow): the only other worker, if any;
    // else the local worker, which then refuses the goal with its reason.
    const others = candidates.filter((id) => id !== LOCAL_WORKER);
    if (others.length === 1) return others[0];
    return others.length === 0 ? LOCAL_WORKER : undefined;
  }
}

function serves(worker: GoalWorkerProvider | undefined, mode: GoalContinuationMode): boolean {
  if (!worker) return false;
  if (mode === 'heartbeat') return typeof worker.probe === 'function';
  return mode !== 'manual';
}
