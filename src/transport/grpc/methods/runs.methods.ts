import { Injectable } from '@nestjs/common';
import {
  BulkCancelBody,
  bulkCancelRunIds,
  BulkCancelResult,
  CancelRunBody,
  CreateRunBody,
  ForkRunBody,
  KeyedRunOperations,
  resumeReason,
  RunArtifactReader,
  RunArtifactsController,
  RunControlBody,
  RunControlController,
  RunControlService,
  RunCreationService,
  RunEventFeed,
  RunEventsController,
  RunEventsQuery,
  RunsController,
  RunsService,
} from '../../../capabilities/runs';
import { EngineCall, EngineMethod, StreamingEngineMethod, UnaryEngineMethod } from '../engine-method';
import type { JsonObject } from '../json-struct';

/**
 * The run lifecycle over gRPC: the REST routes of RunsController, RunControlController and
 * RunEventsController, through their services and the REST DTOs. Each method takes from its request
 * message exactly what REST takes from the path, the query and the body, so a member REST would
 * refuse is refused here in the same words.
 */

/** Splits a request into the path parameter and the rest (the body or query REST validates). */
function withoutRunId(request: JsonObject): { runId: string; rest: JsonObject } {
  const { runId, ...rest } = request;
  return { runId: typeof runId === 'string' ? runId : '', rest };
}

@Injectable()
@EngineMethod()
export class CreateRunMethod implements UnaryEngineMethod {
  readonly name = 'CreateRun';
  readonly kind = 'unary';
  readonly rest = { controller: RunsController, handler: 'create' };

  constructor(private readonly creation: RunCreationService) {}

  async handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    const body = await call.validate(CreateRunBody, request, 'body');
    const { snapshot } = await this.creation.create(call.requirePrincipal(), body, call.header('idempotency-key'));
    // A gRPC call has no origin to make absolute URLs from: the REST paths, relative to the host's base URL.
    const self = `/v1/runs/${encodeURIComponent(snapshot.runId)}`;
    return { ...snapshot, eventsUrl: `${self}/events`, statusUrl: self };
  }
}

@Injectable()
@EngineMethod()
export class GetRunMethod implements UnaryEngineMethod {
  readonly name = 'GetRun';
  readonly kind = 'unary';
  readonly rest = { controller: RunsController, handler: 'get' };

  constructor(private readonly runs: RunsService) {}

  handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    return this.runs.get(call.requirePrincipal(), withoutRunId(request).runId);
  }
}

@Injectable()
@EngineMethod()
export class CancelRunMethod implements UnaryEngineMethod {
  readonly name = 'CancelRun';
  readonly kind = 'unary';
  readonly rest = { controller: RunsController, handler: 'cancel' };

  constructor(private readonly keyed: KeyedRunOperations) {}

  /** Honours `idempotency-key` metadata like the REST route (the same record: a key works across both transports). */
  async handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    const { runId, rest } = withoutRunId(request);
    const body = await call.validate(CancelRunBody, rest, 'body');
    const p = call.requirePrincipal();
    return (await this.keyed.cancel(p, runId, body?.reason, call.header('idempotency-key'))).body;
  }
}

/** ForkRun: `POST /v1/runs/{runId}:fork` (replay.md), with the REST route's idempotency record. */
@Injectable()
@EngineMethod()
export class ForkRunMethod implements UnaryEngineMethod {
  readonly name = 'ForkRun';
  readonly kind = 'unary';
  readonly rest = { controller: RunControlController, handler: 'fork' };

  constructor(private readonly keyed: KeyedRunOperations) {}

  async handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    const { runId, rest } = withoutRunId(request);
    const body = await call.validate(ForkRunBody, rest, 'body');
    const p = call.requirePrincipal();
    // No origin over gRPC: the REST paths, relative to the host's base URL (as CreateRun answers).
    return (await this.keyed.fork(p, runId, body, call.header('idempotency-key'), '')).body;
  }
}

/**
 * BulkCancelRuns: each id cancelled on its own, results in request order, as REST answers. One
 * difference is the proto's, not the host's: a result's `error` is the protocol's ErrorEnvelope
 * message (`{error, message, details?}`, api/openapi.yaml), while the REST body names the code
 * `code` (`{code, message, details?}`, what the conformance suite reads); the code travels as
 * ErrorEnvelope.error, nothing else changes.
 */
@Injectable()
@EngineMethod()
export class BulkCancelRunsMethod implements UnaryEngineMethod {
  readonly name = 'BulkCancelRuns';
  readonly kind = 'unary';
  readonly rest = { controller: RunControlController, handler: 'bulkCancel' };

  constructor(private readonly control: RunControlService) {}

  async handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    const body = await call.validate(BulkCancelBody, request, 'body');
    const results = await this.control.bulkCancel(call.requirePrincipal(), bulkCancelRunIds(body), body.reason);
    return { results: results.map(asBulkCancelRunResult) };
  }
}

/** A REST bulk-cancel result as the BulkCancelRunResult message carries it (its error an ErrorEnvelope). */
export function asBulkCancelRunResult(r: BulkCancelResult): Record<string, unknown> {
  if (!r.error) return { ...r };
  const { code, ...rest } = r.error;
  return { ...r, error: { error: code, ...rest } };
}

/** PauseRun: `POST /v1/runs/{runId}:pause`; the `idempotency-key` metadata repeats a first pause as REST's header does. */
@Injectable()
@EngineMethod()
export class PauseRunMethod implements UnaryEngineMethod {
  readonly name = 'PauseRun';
  readonly kind = 'unary';
  readonly rest = { controller: RunControlController, handler: 'pause' };

  constructor(private readonly control: RunControlService) {}

  async handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    const { runId, rest } = withoutRunId(request);
    const body = await call.validate(RunControlBody, rest, 'body');
    return { ...(await this.control.pause(call.requirePrincipal(), runId, body, call.header('idempotency-key'))) };
  }
}

/** ResumeRun: `POST /v1/runs/{runId}:resume`. */
@Injectable()
@EngineMethod()
export class ResumeRunMethod implements UnaryEngineMethod {
  readonly name = 'ResumeRun';
  readonly kind = 'unary';
  readonly rest = { controller: RunControlController, handler: 'resume' };

  constructor(private readonly control: RunControlService) {}

  async handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    const { runId, rest } = withoutRunId(request);
    const body = await call.validate(RunControlBody, rest, 'body');
    return { ...(await this.control.resume(call.requirePrincipal(), runId, resumeReason(body))) };
  }
}

/** GetArtifact: `GET /v1/runs/{runId}/artifacts/{artifactId}`; the artifact rides in additional_properties. */
@Injectable()
@EngineMethod()
export class GetArtifactMethod implements UnaryEngineMethod {
  readonly name = 'GetArtifact';
  readonly kind = 'unary';
  readonly rest = { controller: RunArtifactsController, handler: 'get' };

  constructor(private readonly artifacts: RunArtifactReader) {}

  /**
   * The same lookup and refusals as REST (404 for an unknown artifact or a run the caller cannot
   * see). REST answers the raw bytes; the message carries the reference and the bytes as base64
   * (`contentBase64`) in `additional_properties`, the proto's free-form artifact shape.
   */
  async handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    const { runId, rest } = withoutRunId(request);
    const found = await this.artifacts.read(call.requirePrincipal(), runId, typeof rest.artifactId === 'string' ? rest.artifactId : '');
    return { ...found.ref, runId, contentBase64: found.data.toString('base64') };
  }
}

/**
 * StreamRunEvents: the SSE stream's events, from `last_sequence` (the Last-Event-ID of SSE), in
 * sequence order, ending with OK after the terminal event. `stream_modes` filters exactly like the
 * SSE route's `streamMode` (default `updates`; unknown modes INVALID_ARGUMENT with the same
 * envelope). A gRPC stream carries RunEventEnvelope messages, so `values` (snapshots) is refused
 * here; `buffer_ms` is accepted in the SSE range and ignored (each message is its own frame).
 */
@Injectable()
@EngineMethod()
export class StreamRunEventsMethod implements StreamingEngineMethod {
  readonly name = 'StreamRunEvents';
  readonly kind = 'server-stream';
  readonly rest = { controller: RunEventsController, handler: 'stream' };

  /** How long one poll waits before the stream looks again at whether its call is still open. */
  static readonly WAIT_MS = 1000;

  constructor(private readonly feed: RunEventFeed) {}

  async handle(call: EngineCall, request: JsonObject, send: (message: unknown) => Promise<void>): Promise<void> {
    const { runId, rest } = withoutRunId(request);
    const { streamModes, ...query } = rest;
    if (Array.isArray(streamModes) && streamModes.length) query.streamMode = streamModes.join(',');
    const q = await call.validate(RunEventsQuery, query, 'query');
    // The refusals (an unknown mode, `values`, an unknown run) come before anything is sent.
    const batches = await this.feed.open(call.requirePrincipal(), runId, q, { stream: this.name, waitMs: StreamRunEventsMethod.WAIT_MS, closed: () => call.signal.aborted });
    for await (const batch of batches) for (const e of batch) await send(e);
  }
}
