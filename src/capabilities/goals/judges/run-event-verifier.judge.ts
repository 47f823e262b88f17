import { Injectable } from '@nestjs/common';
import { GoalJudge, GoalJudgeInput, GoalJudgeProvider, GoalRunVerification, GoalVerdict, GoalVerdictUnavailable } from '@openwop-host/plugin-sdk';
import { EventLogService } from '../../../platform/events/event-log.service';

/**
 * The built-in `verifier` judge: the verdict is the run's RFC 0090 `agent.verified` event (`pass`
 * satisfies, `fail`/`revise` do not), from the worker's report of a remote run or from this host's
 * event log for a local run. With `completion.verifierRef` set, only that verifier's verdicts count.
 * No verdict is no completion: the judge says so and the host never guesses.
 */
@Injectable()
@GoalJudge({ check: 'verifier' })
export class RunEventVerifierJudge implements GoalJudgeProvider {
  constructor(private readonly events: EventLogService) {}

  async evaluate(input: GoalJudgeInput): Promise<GoalVerdict> {
    const ref = input.goal.verifierRef ?? undefined;
    let verification: GoalRunVerification | undefined = input.run.verification;
    if (verification && ref && verification.agentId !== ref) verification = undefined;
    if (!verification) {
      const events = await this.events.read({ tenant: input.goal.tenant, workspace: input.goal.workspace }, input.run.runId, { type: 'agent.verified' });
      for (const e of events) {
        const p = e.payload as { agentId?: unknown; verdict?: unknown; confidence?: unknown };
        if (p.verdict !== 'pass' && p.verdict !== 'fail' && p.verdict !== 'revise') continue;
        if (ref && p.agentId !== ref) continue;
        verification = { agentId: typeof p.agentId === 'string' ? p.agentId : undefined, verdict: p.verdict, confidence: typeof p.confidence === 'number' ? p.confidence : undefined };
      }
    }
    if (!verification) throw new GoalVerdictUnavailable(`run ${input.run.runId} has no agent.verified verdict${ref ? ` from ${ref}` : ''}`);
    const confidence = typeof verification.confidence === 'number' && verification.confidence >= 0 && verification.confidence <= 1 ? verification.confidence : 1;
    return { satisfied: verification.verdict === 'pass', confidence };
  }
}
