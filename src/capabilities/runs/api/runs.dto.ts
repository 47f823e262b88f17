import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsInt, IsObject, IsOptional, IsString, IsUrl, Max, MaxLength, Min, MinLength, ValidateIf } from '../../../platform/http/dto-validation';
import { ValidationError } from '../../../platform/errors/domain-error';
import { PageQuery } from '../../../platform/pagination/page-query';
import { FORK_MODES, ForkMode } from '../replay/run-fork.service';
import { RUN_STATUSES } from '../run-snapshot';
import { MAX_BUFFER_MS } from '../../../platform/events/stream-modes';

/**
 * The request DTOs of the run routes (runs, run-control and run-events controllers), shared with
 * the gRPC methods, which validate their request messages with them.
 */

export class CreateRunBody {
  @ApiProperty({ minLength: 1, maxLength: 256, description: 'A chain installed for your tenant (`chainId` or `workflow:<chainId>`), or a conformance fixture while the test seams are on. Required unless `mode` is given.' })
  @ValidateIf((o: CreateRunBody) => o.mode === undefined || o.workflowId !== undefined)
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  workflowId: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Run inputs, readable by node configs as `{{inputs.<name>}}`.' })
  @IsOptional()
  @IsObject()
  inputs?: Record<string, unknown>;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    properties: {
      runTimeoutMs: { type: 'integer', minimum: 1, description: 'RFC 0058: wall-clock deadline of the run in ms, at most `limits.maxRunDurationMs` of /.well-known/openwop (default 604800000); a run past it fails with run_timeout.' },
      maxLoopIterations: { type: 'integer', minimum: 1, description: 'RFC 0058: most node executions of the run, at most `limits.maxLoopIterations` (default 100); past it the run fails with loop_limit_exceeded.' },
      recursionLimit: { type: 'integer', minimum: 1, description: 'Alias of maxLoopIterations (RunOptions reserved key), used when maxLoopIterations is absent; same bound.' },
      maxCostUsd: { type: 'number', minimum: 0, description: 'RFC 0058/0084: most accumulated cost of the run in USD, at most `limits.maxBudgetCostUsd` (default 100).' },
    },
    description:
      'RunOptions.configurable: a per-run overlay, stored and returned on the run. The RFC 0058 bounds below are checked against the host limits advertised at /.well-known/openwop (a value outside them is 400 validation_error); other keys are kept as given.',
  })
  @IsOptional()
  @IsObject()
  configurable?: Record<string, unknown>;

  @ApiPropertyOptional({ type: [String], maxItems: 100 })
  @IsOptional()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @MinLength(1, { each: true })
  @MaxLength(256, { each: true })
  tags?: string[];

  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  @IsOptional()
  @IsObject()
  metadata?: Record<string, unknown>;

  @ApiPropertyOptional({ description: 'Defaults to the credential’s tenant; another tenant is 403.' })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  tenantId?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 256, description: 'Opaque correlation id. With `X-Dedup: enforce`, a second run of the scope while one is active is 409 `run_already_active`.' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  scopeId?: string;

  @ApiPropertyOptional({ format: 'uri', maxLength: 2048, description: 'Signed-token HITL callback URL (interrupt.md), kept with the run.' })
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  @IsUrl({ require_protocol: true, require_tld: false, protocols: ['http', 'https'] })
  callbackUrl?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'RFC 0129 data-residency constraint. This host advertises no `dataResidency`: 422 `residency_unavailable`, no run.' })
  @IsOptional()
  @IsObject()
  residency?: Record<string, unknown>;

  @ApiPropertyOptional({ enum: ['eval'], description: 'RFC 0081 eval-suite run. This host advertises no `agents.evalSuite`: 501 `capability_not_provided`.' })
  @IsOptional()
  @IsIn(['eval'])
  mode?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 2048, description: 'RFC 0081: the eval suite (with `mode: "eval"`).' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(2048)
  evalSuiteRef?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 256, description: 'RFC 0081: the agent the eval suite targets (with `mode: "eval"`).' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  agentId?: string;
}

export class CancelRunBody {
  @ApiPropertyOptional({ maxLength: 500, description: 'Why the run is cancelled (recorded on run.cancelled).' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;
}

/** The most run ids one `POST /v1/runs:bulk-cancel` takes (rest-endpoints.md recommends 100). */
export const MAX_BULK_CANCEL_RUN_IDS = 100;

export class BulkCancelBody {
  @ApiProperty({ type: [String], minItems: 1, maxItems: MAX_BULK_CANCEL_RUN_IDS, description: `1 to ${MAX_BULK_CANCEL_RUN_IDS} run ids; more is 400 validation_error with details.maxRunIds.` })
  @IsArray()
  @ArrayMinSize(1)
  @IsString({ each: true })
  @MinLength(1, { each: true })
  @MaxLength(128, { each: true })
  runIds: string[];

  @ApiPropertyOptional({ maxLength: 512, description: 'Why the runs are cancelled (recorded on each run.cancelled).' })
  @IsOptional()
  @IsString()
  @MaxLength(512)
  reason?: string;
}

/**
 * The run ids of a validated bulk-cancel body, refused past the cap with `details.maxRunIds` (the
 * conformance suite reads it, so the cap is checked here rather than as a DTO constraint). Shared
 * by the REST route and gRPC BulkCancelRuns.
 */
export function bulkCancelRunIds(body: BulkCancelBody): string[] {
  if (body.runIds.length > MAX_BULK_CANCEL_RUN_IDS) {
    throw new ValidationError(`Send at most ${MAX_BULK_CANCEL_RUN_IDS} run ids per request.`, { field: 'runIds', maxRunIds: MAX_BULK_CANCEL_RUN_IDS });
  }
  return body.runIds;
}

export const DRAIN_POLICIES = ['immediate', 'drain-current-node'] as const;

export class RunControlBody {
  @ApiPropertyOptional({ maxLength: 500, description: 'Why (recorded on run.paused / run.resumed).' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;

  @ApiPropertyOptional({ enum: DRAIN_POLICIES, default: 'drain-current-node', description: '`:pause` only. `immediate` aborts the nodes in flight (they run again on resume); `drain-current-node` lets them finish first.' })
  @IsOptional()
  @IsIn(DRAIN_POLICIES as unknown as string[])
  drainPolicy?: (typeof DRAIN_POLICIES)[number];
}

export class ForkRunBody {
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'Events with a sequence below it are fixed history (copied; the nodes they completed keep their recorded outputs); the rest is executed again. `0` (the default for `replay`): everything. Required for `branch`. Past the source\'s last sequence: 422.' })
  @IsOptional()
  @IsInt()
  @Min(0)
  fromSeq?: number;

  @ApiProperty({ enum: FORK_MODES, description: '`replay`: deterministic re-execution (no overlay); `branch`: a new execution, with an optional RunOptions overlay.' })
  @IsIn(FORK_MODES as unknown as string[])
  mode: ForkMode;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: false,
    properties: {
      configurable: { type: 'object', additionalProperties: true, description: 'Merged over the source\'s configurable; the RFC 0058 bounds are checked as on POST /v1/runs.' },
      tags: { type: 'array', items: { type: 'string' }, maxItems: 100, description: 'Replace the source\'s tags.' },
      metadata: { type: 'object', additionalProperties: true, description: 'Merged over the source\'s metadata.' },
    },
    description: '`branch` only: RunOptions to overlay. A non-empty overlay on `replay` is 400.',
  })
  @IsOptional()
  @IsObject()
  runOptionsOverlay?: Record<string, unknown>;
}

export class RunDiffQuery {
  @ApiProperty({ minLength: 1, maxLength: 128, description: 'The run to compare with (b).' })
  @IsString()
  @MinLength(1)
  @MaxLength(128)
  against: string;
}

/** The reason of a validated `:resume` body, which takes no drainPolicy (REST route and gRPC ResumeRun). */
export function resumeReason(body: RunControlBody | undefined): string | undefined {
  if (body?.drainPolicy !== undefined) throw new ValidationError('drainPolicy applies to :pause only.', { field: 'drainPolicy' });
  return body?.reason;
}

export class RunListQuery extends PageQuery {
  @ApiPropertyOptional({ enum: RUN_STATUSES })
  @IsOptional()
  @IsIn(RUN_STATUSES as unknown as string[])
  status?: string;

  @ApiPropertyOptional({ type: 'string', maxLength: 128, description: 'Only the runs of this workflow (exact match).' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  workflowId?: string;
}

export class RunEventsQuery {
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'Resume after this sequence (the `Last-Event-ID` header wins).' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  lastSequence?: number;

  @ApiPropertyOptional({
    type: 'string',
    default: 'updates',
    pattern: '^(values|updates|messages|debug)(,(values|updates|messages|debug))*$',
    description: 'One of `values`, `updates` (default), `messages`, `debug`, or a comma-separated union of them; `values` combines with nothing. Anything else is 400 `unsupported_stream_mode` with `details.supported`.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  streamMode?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: MAX_BUFFER_MS, description: 'Batch events for up to this many ms into `event: batch` frames (a JSON array of events); 0 or absent: one frame per event. Terminal events and `node.suspended` flush at once.' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(MAX_BUFFER_MS)
  bufferMs?: number;
}
