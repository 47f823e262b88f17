import { applyDecorators, Body, Controller, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiProperty, ApiPropertyOptional, ApiQuery, ApiTags } from '@nestjs/swagger';
import { IsIn, IsOptional } from '../../platform/http/dto-validation';
import { CurrentPrincipal, Scopes } from '../../platform/identity/decorators';
import { SeamAlias } from '../../platform/seams/seam-alias';
import type { Principal } from '../../platform/identity/principal';
import { ApiErrors } from '../../platform/openapi/api-errors.decorator';
import { ApiNextCursor, NEXT_CURSOR_PROPERTY, PageQuery } from '../../platform/pagination/page-query';
import { protocolSchemaRef } from '../../platform/openapi/protocol-schemas';
import { GoalRunView, GoalStatusView, GoalView } from './goal-view';
import { GoalsService } from './goals.service';

const STATES = ['active', 'satisfied', 'escalated', 'abandoned', 'bound-exceeded'];

class GoalListQuery extends PageQuery {
  @ApiPropertyOptional({ enum: STATES, description: 'Only goals in this state.' })
  @IsOptional()
  @IsIn(STATES)
  state?: string;
}

class GoalListResponse {
  @ApiProperty({ type: 'array', items: protocolSchemaRef('Goal') })
  goals: GoalView[];

  @ApiNextCursor()
  nextCursor: string | null;
}

const GOAL = { schema: protocolSchemaRef('Goal') };
const STATUS_SCHEMA = {
  type: 'object',
  required: ['goalId', 'paused', 'nextDueAt', 'accumulatedCostUsd', 'schedule', 'commitmentAt', 'worker', 'workflowId', 'criteria', 'pendingRunId', 'closedAt'],
  properties: {
    goalId: { type: 'string' },
    paused: { type: 'boolean', description: 'Continuation suspended (the wire state stays active).' },
    nextDueAt: { type: 'string', nullable: true, format: 'date-time', description: 'When the scheduler looks at the goal next.' },
    accumulatedCostUsd: { type: 'number', description: 'Cost of the contributing runs so far (counted once per run).' },
    schedule: { type: 'object', nullable: true, description: '{intervalMs} or {cron, timezone?} of a schedule goal, or the tick of a heartbeat goal.' },
    commitmentAt: { type: 'string', nullable: true, format: 'date-time', description: 'When the armed commitment of a commitment goal fires (null once fired, until re-armed).' },
    worker: { type: 'string', nullable: true, description: 'The goal worker that starts its runs.' },
    workflowId: { type: 'string', nullable: true, description: 'The workflow (chain) its runs execute, when the goal names one.' },
    criteria: { type: 'object', nullable: true, description: 'JSON Schema criteria of the host judge.' },
    pendingRunId: { type: 'string', nullable: true, description: 'The run of the iteration in flight.' },
    closedAt: { type: 'string', nullable: true, format: 'date-time' },
  },
};

const RUNS_SCHEMA = {
  type: 'object',
  required: ['runs', 'nextCursor'],
  properties: {
    nextCursor: NEXT_CURSOR_PROPERTY,
    runs: {
      type: 'array',
      items: {
        type: 'object',
        required: ['runId', 'ordinal', 'status', 'costUsd', 'satisfied', 'confidence', 'recordedAt'],
        properties: {
          runId: { type: 'string' },
          ordinal: { type: 'integer', description: '1-based order in which the run was recorded.' },
          status: { type: 'string', description: 'Terminal status of the run, `reported` for a run reported by a client.' },
          costUsd: { type: 'number', nullable: true },
          satisfied: { type: 'boolean', nullable: true, description: 'The recorded verdict; null when a bound closed the goal before judging.' },
          confidence: { type: 'number', nullable: true },
          recordedAt: { type: 'string', format: 'date-time' },
        },
      },
    },
  },
};

function GoalIdParam() {
  return ApiParam({ name: 'id', description: 'Goal id (UUID). Unknown and foreign ids are 404.' });
}

/** A normative route. */
function Op(operationId: string, summary: string) {
  return applyDecorators(ApiOperation({ operationId, summary }));
}

/**
 * Standing goals (RFC 0097). Every operation is served at its normative `/v1/goals...` path and at
 * the `/v1/host/sample/goals...` seam path (`@SeamAlias`, mounted by GoalsModule), by the same handler.
 */
@ApiTags('goals')
@Controller()
export class GoalsController {
  constructor(private readonly goals: GoalsService) {}

  // --- create ---------------------------------------------------------------------------------

  @Scopes('goals:write')
  @Post('/v1/goals')
  @HttpCode(201)
  @Op('createGoal', 'Create a standing goal (bounds required; 422 without)')
  @ApiBody({ schema: protocolSchemaRef('GoalCreateRequest') })
  @ApiCreatedResponse(GOAL)
  @ApiErrors(400, 401, 403, 422)
  @SeamAlias({ path: '/v1/host/sample/goals', httpCode: 200, operationId: 'seamCreateGoal', summary: 'Test seam: create a standing goal' })
  create(@CurrentPrincipal() p: Principal, @Body() body: unknown): Promise<GoalView> {
    return this.goals.create(p, body);
  }

  // --- list / get -----------------------------------------------------------------------------

  @Scopes('goals:read')
  @Get('/v1/goals')
  @Op('listGoals', 'List the goals of the caller’s tenant (and workspace)')
  @ApiQuery({ name: 'state', required: false, enum: STATES })
  @ApiOkResponse({ type: GoalListResponse })
  @ApiErrors(400, 401, 403)
  @SeamAlias({ path: '/v1/host/sample/goals', operationId: 'seamListGoals', summary: 'Test seam: list goals' })
  async list(@CurrentPrincipal() p: Principal, @Query() q: GoalListQuery): Promise<GoalListResponse> {
    const page = await this.goals.list(p, q);
    return { goals: page.items, nextCursor: page.nextCursor };
  }

  @Scopes('goals:read')
  @Get('/v1/goals/:id')
  @Op('getGoal', 'Read a goal: state, progress (iterations, contributing runs) and the last verdict')
  @GoalIdParam()
  @ApiOkResponse(GOAL)
  @ApiErrors(401, 403, 404)
  @SeamAlias({ path: '/v1/host/sample/goals/:id', operationId: 'seamGetGoal', summary: 'Test seam: read a goal' })
  get(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<GoalView> {
    return this.goals.get(p, id);
  }

  @Scopes('goals:read')
  @Get('/v1/goals/:id/status')
  @Op('getGoalStatus', 'Host extension: continuation status of a goal (paused, next due time, accumulated cost, schedule, criteria)')
  @GoalIdParam()
  @ApiOkResponse({ schema: STATUS_SCHEMA })
  @ApiErrors(401, 403, 404)
  status(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<GoalStatusView> {
    return this.goals.status(p, id);
  }

  @Scopes('goals:read')
  @Get('/v1/goals/:id/runs')
  @Op('listGoalRuns', 'Host extension: the contributing runs of a goal with their recorded verdicts and costs')
  @GoalIdParam()
  @ApiOkResponse({ schema: RUNS_SCHEMA })
  @ApiErrors(400, 401, 403, 404)
  async runs(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Query() q: PageQuery): Promise<{ runs: GoalRunView[]; nextCursor: string | null }> {
    const page = await this.goals.runs(p, id, q);
    return { runs: page.items, nextCursor: page.nextCursor };
  }

  // --- update (PATCH and POST) ----------------------------------------------------------------

  @Scopes('goals:write')
  @Patch('/v1/goals/:id')
  @Op('updateGoal', 'Edit an active goal (a client state is refused: 422)')
  @GoalIdParam()
  @ApiBody({ schema: protocolSchemaRef('GoalUpdateRequest') })
  @ApiOkResponse(GOAL)
  @ApiErrors(400, 401, 403, 404, 409, 422)
  @SeamAlias({ path: '/v1/host/sample/goals/:id', operationId: 'seamUpdateGoal', summary: 'Test seam: edit a goal' })
  update(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Body() body: unknown): Promise<GoalView> {
    return this.goals.update(p, id, body);
  }

  @Scopes('goals:write')
  @Post('/v1/goals/:id')
  @HttpCode(200)
  @Op('updateGoalByPost', 'Edit an active goal (POST form of PATCH)')
  @GoalIdParam()
  @ApiBody({ schema: protocolSchemaRef('GoalUpdateRequest') })
  @ApiOkResponse(GOAL)
  @ApiErrors(400, 401, 403, 404, 409, 422)
  @SeamAlias({ path: '/v1/host/sample/goals/:id', operationId: 'seamUpdateGoalByPost', summary: 'Test seam: edit a goal (POST form)' })
  updateByPost(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Body() body: unknown): Promise<GoalView> {
    return this.goals.update(p, id, body);
  }

  // --- pause / resume / abandon ---------------------------------------------------------------

  @Scopes('goals:write')
  @Post('/v1/goals/:id/pause')
  @HttpCode(200)
  @Op('pauseGoal', 'Suspend continuation (the state stays active)')
  @GoalIdParam()
  @ApiOkResponse(GOAL)
  @ApiErrors(401, 403, 404, 409)
  @SeamAlias({ path: '/v1/host/sample/goals/:id/pause', operationId: 'seamPauseGoal', summary: 'Test seam: pause a goal' })
  pause(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<GoalView> {
    return this.goals.pause(p, id);
  }

  @Scopes('goals:write')
  @Post('/v1/goals/:id/resume')
  @HttpCode(200)
  @Op('resumeGoal', 'Re-arm continuation')
  @GoalIdParam()
  @ApiOkResponse(GOAL)
  @ApiErrors(401, 403, 404, 409)
  @SeamAlias({ path: '/v1/host/sample/goals/:id/resume', operationId: 'seamResumeGoal', summary: 'Test seam: resume a goal' })
  resume(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<GoalView> {
    return this.goals.resume(p, id);
  }

  @Scopes('goals:write')
  @Post('/v1/goals/:id/abandon')
  @HttpCode(200)
  @Op('abandonGoal', 'Abandon a goal (terminal; goal.closed once)')
  @GoalIdParam()
  @ApiOkResponse(GOAL)
  @ApiErrors(401, 403, 404, 409)
  @SeamAlias({ path: '/v1/host/sample/goals/:id/abandon', operationId: 'seamAbandonGoal', summary: 'Test seam: abandon a goal' })
  abandon(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<GoalView> {
    return this.goals.abandon(p, id);
  }

  // --- contributing runs ----------------------------------------------------------------------

  @Scopes('goals:write')
  @Post('/v1/goals/:id/runs')
  @HttpCode(200)
  @Op('reportGoalRun', 'Report a contributing run; the goal’s judge evaluates it once')
  @GoalIdParam()
  @ApiBody({ schema: protocolSchemaRef('GoalRunReport') })
  @ApiOkResponse(GOAL)
  @ApiErrors(400, 401, 403, 404, 409)
  @SeamAlias({ path: '/v1/host/sample/goals/:id/runs', operationId: 'seamReportGoalRun', summary: 'Test seam: report a contributing run' })
  reportRun(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Body() body: unknown): Promise<GoalView> {
    return this.goals.reportRun(p, id, body);
  }

}
