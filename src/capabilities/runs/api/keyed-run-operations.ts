import { Injectable } from '@nestjs/common';
import type { Principal } from '../../../platform/identity/principal';
import { IdempotencyStore, IdempotentAnswer } from '../../../platform/idempotency/idempotency-store.service';
import { ForkRequest, RunForkService } from '../replay/run-fork.service';
import { RunsService } from '../runs.service';

/**
 * The run operations that honour an `Idempotency-Key`, written once for both transports: REST and
 * gRPC share the idempotency record (one key is one operation whichever transport repeats it).
 */
@Injectable()
export class KeyedRunOperations {
  constructor(
    private readonly idempotency: IdempotencyStore,
    private readonly runs: RunsService,
    private readonly forks: RunForkService,
  ) {}

  /** Cancel (`POST /v1/runs/{runId}/cancel`): the first answer, or the recorded one for a repeated key. */
  cancel(p: Principal, runId: string, reason: string | undefined, key: string | undefined): Promise<IdempotentAnswer<Record<string, unknown>>> {
    return this.idempotency.execute(p, 'POST /v1/runs/{runId}/cancel', key, { runId, reason: reason ?? null }, async () => ({
      status: 200,
      body: (await this.runs.cancel(p, runId, reason)) as unknown as Record<string, unknown>,
    }));
  }

  /**
   * Fork (`POST /v1/runs/{runId}:fork`): 201 with the new run and its URLs under `origin` (REST: the
   * request's base URL; gRPC, which has no origin: '' for paths relative to the host).
   */
  fork(p: Principal, runId: string, body: ForkRequest, key: string | undefined, origin: string): Promise<IdempotentAnswer<Record<string, unknown>>> {
    return this.idempotency.execute(p, 'POST /v1/runs/{runId}:fork', key, { runId, ...body }, async () => {
      const { answer } = await this.forks.fork(p, runId, body);
      const self = `${origin}/v1/runs/${encodeURIComponent(answer.runId)}`;
      return { status: 201, body: { ...answer, eventsUrl: `${self}/events`, statusUrl: self } as Record<string, unknown> };
    });
  }
}
