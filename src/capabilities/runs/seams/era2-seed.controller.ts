import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsInt, IsISO8601, IsObject, IsOptional, IsString, Matches, MaxLength, Min, ValidateNested } from '../../../platform/http/dto-validation';
import { DataSource } from 'typeorm';
import { ValidationError } from '../../../platform/errors/domain-error';
import { EventLogService } from '../../../platform/events/event-log.service';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { parseDefinition } from '../workflow-definition';
import { definitionRef } from '../run-definition.entity';
import { principalRef } from '../run-principal.entity';
import { CONFORMANCE_FIXTURES } from '../workflow-resolver.service';

class SeedEvent {
  @ApiProperty({ description: 'A v1 event type, stored as given (never translated at write time).' })
  @IsString()
  @Matches(/^[A-Za-z][A-Za-z0-9_.-]{0,127}$/)
  type: string;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'The v2 sequence of the event: 0, 1, 2, ... in order.' })
  @IsInt()
  @Min(0)
  sequence: number;

  @ApiProperty({ type: 'object', additionalProperties: true })
  @IsObject()
  payload: Record<string, unknown>;

  @ApiPropertyOptional({ format: 'date-time' })
  @IsOptional()
  @IsISO8601()
  timestamp?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9._~-]{16,128}$/)
  causationId?: string;
}

const SEEDABLE_STATUSES = ['completed', 'failed', 'cancelled', 'running', 'paused'] as const;

class SeedBody {
  @ApiProperty({ enum: [2], description: 'The era of the seeded log: 2 (v1 vocabulary).' })
  @IsIn([2])
  eventLogSchemaVersion: number;

  @ApiProperty({ enum: SEEDABLE_STATUSES })
  @IsIn(SEEDABLE_STATUSES as unknown as string[])
  status: string;

  @ApiProperty({ type: [SeedEvent] })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(200)
  @ValidateNested({ each: true })
  @Type(() => SeedEvent)
  events: SeedEvent[];
}

/** What a seeded run executes when the engine picks it up (an open run) or a fork replays it: the fixtures' chains. */
const OPEN_CHAIN = 'conformance-cancellable';
const CLOSED_CHAIN = 'conformance-noop';

/**
 * The v2 seams profile's `seedEra2EventLog` (RFC 0176 §A.3, `api/seams-v2.yaml`), at
 * `POST /v1/host/sample/event-log/seed` (`/conformance/seams/sample/event-log/seed` under major 2):
 * a run of the caller's tenant whose log is the given v1-vocabulary events, stored as they are
 * (types untranslated, times kept, in the given order and sequence space) and whose era is `2`
 * (`metadata.eventLogSchemaVersion`), so every major-2 reader must translate it (docs/versions.md), and
 * no recorded owner subject, so its owner reads as the legacy subject (`urn:openwop:legacy`).
 * The run holds `status`; an open one (`running`) executes the cancellable fixture's chain when
 * the engine claims it, so the host's own writer appends to the era-2 log (and a cancel ends it).
 */
@ApiTags('test-seams')
@Controller()
export class Era2SeedController {
  constructor(
    private readonly ds: DataSource,
    private readonly events: EventLogService,
  ) {}

  @TestSeam()
  @Scopes('runs:create')
  @Post('/v1/host/sample/event-log/seed')
  @HttpCode(201)
  @ApiOperation({ operationId: 'seamSeedEra2EventLog', summary: '(test seam) Store an era-2 (v1-vocabulary) event log as a run of the caller\'s tenant: 201 {runId}' })
  @ApiBody({ type: SeedBody })
  @ApiCreatedResponse({ schema: { type: 'object', required: ['runId'], properties: { runId: { type: 'string' } } } })
  @ApiErrors(400, 401, 403)
  async seed(@CurrentPrincipal() p: Principal, @Body() body: SeedBody): Promise<{ runId: string }> {
    // The log is stored in its own sequence space: 0, 1, 2, ... with no gap (stored from 1, read back from 0).
    body.events.forEach((e, i) => {
      if (e.sequence !== i) throw new ValidationError(`events[${i}].sequence must be ${i}: a seeded log starts at 0 and has no gap.`, { field: `events[${i}].sequence` });
    });
    const started = body.events.find((e) => e.type === 'run.started');
    const workflowId = typeof started?.payload.workflowId === 'string' ? started.payload.workflowId : CLOSED_CHAIN;
    const open = body.status === 'running';
    const chain = open ? OPEN_CHAIN : CLOSED_CHAIN;
    const { definition } = parseDefinition(chain, CONFORMANCE_FIXTURES[chain]);
    const first = body.events[0].timestamp ?? new Date().toISOString();
    const last = body.events[body.events.length - 1].timestamp ?? first;
    return this.ds.transaction(async (m) => {
      const [{ id }] = (await m.query(
        `INSERT INTO "run" ("tenant", "workspace", "workspace_key", "principal", "kind", "status", "metadata", "workflow_id", "definition_key", "inputs", "configurable", "principal_key", "started_at", "completed_at")
         VALUES ($1, $2, coalesce($2, ''), $3, 'workflow', $4, $5::jsonb, $6, ${definitionRef('$1', '$7::jsonb')}, $8::jsonb, '{}'::jsonb, ${principalRef('$1', 'NULL', '$9::text[]')}, $10::timestamptz, $11::timestamptz) RETURNING "id"`,
        [
          p.tenant,
          p.workspace ?? null,
          p.principal,
          body.status,
          // No recorded subject: a run of the era before subjects reads as the legacy subject (identity.md §A.3).
          JSON.stringify({ eventLogSchemaVersion: 2 }),
          workflowId,
          JSON.stringify(definition),
          JSON.stringify(open ? { delayMs: 30_000 } : {}),
          [...p.scopes],
          // An open run's bounds (run duration) count from its seeding, not from the log's first event.
          open ? new Date().toISOString() : first,
          ['completed', 'failed', 'cancelled'].includes(body.status) ? last : null,
        ],
      )) as Array<{ id: string }>;
      await this.events.appendMany(
        body.events.map((e) => ({
          scope: { tenant: p.tenant, workspace: p.workspace },
          streamId: id,
          type: e.type,
          payload: e.payload,
          ...(e.causationId ? { causationId: e.causationId } : {}),
          ...(e.timestamp ? { createdAt: e.timestamp } : {}),
        })),
        { manager: m },
      );
      return { runId: id };
    });
  }
}
