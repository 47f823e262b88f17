import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { IsIn } from '../../../platform/http/dto-validation';
import { DataSource } from 'typeorm';
import { DomainError } from '../../../platform/errors/domain-error';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { RunCreationService } from '../run-creation.service';
import { HARD_COST_BUDGET } from './budget-fixtures';
import { settledStatus } from '../seams/settled-status';

const SCENARIOS = ['hard-cost-exhaust', 'model-denied', 'advisory'] as const;

class BudgetRunBody {
  @ApiProperty({ enum: SCENARIOS })
  @IsIn(SCENARIOS)
  scenario: (typeof SCENARIOS)[number];
}

/**
 * `POST /v1/host/sample/budget/run {scenario}` (budget-enforcement): `hard-cost-exhaust` starts the
 * `conformance-budget-cost` fixture under a real `configurable.budget` policy, waits for it to end and
 * answers `{runId, outcome}` (the run's status); its events are the engine's own. `model-denied` and
 * `advisory` answer 501: this host enforces no model lists (a policy naming one is refused at create)
 * and enforces budgets hard only.
 */
@ApiTags('test-seams')
@Controller()
export class BudgetSeamController {
  constructor(
    private readonly creation: RunCreationService,
    private readonly ds: DataSource,
  ) {}

  @TestSeam()
  @Scopes('runs:create')
  @Post('/v1/host/sample/budget/run')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamBudgetRun', summary: '(test seam) RFC 0084: run the budget fixture under a hard cost budget to its end: {runId, outcome}' })
  @ApiBody({ type: BudgetRunBody })
  @ApiOkResponse({ schema: { type: 'object', required: ['runId', 'outcome'], properties: { runId: { type: 'string' }, outcome: { type: 'string' } } } })
  @ApiErrors(400, 401, 403, 501)
  async run(@CurrentPrincipal() p: Principal, @Body() body: BudgetRunBody): Promise<{ runId: string; outcome: string }> {
    if (body.scenario !== 'hard-cost-exhaust') {
      throw new DomainError('not_implemented', 501, body.scenario === 'model-denied' ? 'This host enforces no model allow/deny lists (capabilities.budget.dimensions: ["cost"]).' : 'This host enforces budgets hard only (capabilities.budget.enforce: "hard").');
    }
    const { snapshot } = await this.creation.create(p, { workflowId: 'conformance-budget-cost', inputs: {}, configurable: { budget: HARD_COST_BUDGET } });
    const status = await settledStatus(this.ds.manager, p, snapshot.runId, snapshot.status);
    return { runId: snapshot.runId, outcome: status };
  }
}
