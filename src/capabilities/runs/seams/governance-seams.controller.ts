import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches, MaxLength, MinLength } from '../../../platform/http/dto-validation';
import { ForbiddenError, UnprocessableError, ValidationError } from '../../../platform/errors/domain-error';
import { EventLogService, HOST_STREAM } from '../../../platform/events/event-log.service';
import { ApiKeyService } from '../../../platform/identity/api-key.service';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import { IDENTIFIER, Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { ApprovalsService } from '../../approvals';
import { RunCreationService } from '../run-creation.service';

const SCENARIOS = ['unauthorized-grant', 'grant', 'reject', 'override', 'quorum'] as const;
type Scenario = (typeof SCENARIOS)[number];

class ApprovalGateBody {
  @ApiProperty({ enum: SCENARIOS })
  @IsIn(SCENARIOS)
  scenario!: Scenario;

  @ApiPropertyOptional({ description: 'unauthorized-grant: another principal of the caller\'s tenant, who tries to grant with what it holds now (its live keys, never more than the caller). Other scenarios act as the caller.' })
  @IsOptional()
  @IsString()
  @Matches(IDENTIFIER)
  principal?: string;

  @ApiPropertyOptional({ description: 'override and reject: the reason recorded.' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(2000)
  reason?: string;
}

interface GateOutcome {
  released: boolean;
  event: { type: string; payload: Record<string, unknown> } | null;
  runId: string;
  gateId: string;
  state: string;
}

/** The gate a fixture run opens, once its node has suspended (the run executes on this host's engine). */
const OPEN_WAIT_MS = 10_000;

/**
 * The RFC 0051 approval-gate seam (host-sample-test-seams.md, `approval-gate-flow`): starts a run of
 * a governance-gate fixture as the caller and drives the named scenario through the real approvals
 * service, answering `{released, event, runId, gateId, state}` with the event the host emitted:
 * - `unauthorized-grant`: `principal`, another principal of the caller's tenant holding what its live
 *   keys grant (capped by the caller's scopes), tries to grant: refused (fail closed), the gate stays
 *   pending, and the refusal is emitted as `authorization.decided {allowed: false}`. A principal the
 *   gate would accept is refused by the seam (422) before anything is tried, so no vote is ever cast
 *   in another principal's name;
 * - `grant` / `reject`: the caller grants (a one-grant gate: released) or rejects it;
 * - `quorum`: the caller grants a two-grant gate once (not released: `quorumProgress` 1 of 2);
 * - `override`: the caller takes the two-grant gate's override path with `reason`: released at once
 *   (`overrideBypassesQuorum`), `approval.overridden {principal, reason}` and its audit entry.
 */
@ApiTags('approvals')
@Controller()
export class GovernanceSeamsController {
  constructor(
    private readonly creation: RunCreationService,
    private readonly approvals: ApprovalsService,
    private readonly events: EventLogService,
    private readonly keys: ApiKeyService,
  ) {}

  @TestSeam()
  @Scopes('runs:create', 'approvals:respond')
  @Post('/v1/host/sample/governance/approval-gate')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamGovernanceApprovalGate', summary: '(test seam) Drive a governance approval gate scenario (unauthorized-grant, grant, reject, quorum, override): {released, event}' })
  @ApiBody({ type: ApprovalGateBody })
  @ApiOkResponse({ schema: { type: 'object', required: ['released', 'event', 'runId', 'gateId', 'state'], properties: { released: { type: 'boolean' }, event: { type: 'object', nullable: true }, runId: { type: 'string' }, gateId: { type: 'string' }, state: { type: 'string' } } } })
  @ApiErrors(400, 401, 403, 422)
  async approvalGate(@CurrentPrincipal() p: Principal, @Body() body: ApprovalGateBody): Promise<GateOutcome> {
    if (body.scenario === 'unauthorized-grant' && (!body.principal || body.principal === p.principal)) {
      throw new ValidationError('unauthorized-grant needs `principal`: another principal of your tenant.', { field: 'principal' });
    }
    if (body.scenario === 'override' && !body.reason) throw new ValidationError('override needs a `reason`.', { field: 'reason' });
    const workflowId = body.scenario === 'quorum' || body.scenario === 'override' ? 'conformance-governance-gate-quorum' : 'conformance-governance-gate';
    const { snapshot } = await this.creation.create(p, { workflowId, inputs: {} });
    const runId = snapshot.runId;
    const gateId = await this.openGate(p, runId);
    let event: GateOutcome['event'] = null;
    switch (body.scenario) {
      case 'unauthorized-grant': {
        const grants = (await this.keys.grantsOf(p, body.principal!)) ?? new Set<string>();
        const other: Principal = { tenant: p.tenant, workspace: p.workspace, principal: body.principal!, scopes: new Set([...grants].filter((s) => p.scopes.has(s))), kind: p.kind };
        // Never a vote cast in another principal's name: only a principal the gate refuses is tried.
        if (other.scopes.has('approvals:respond')) throw new UnprocessableError('scenario_inapplicable', `"${other.principal}" holds approvals:respond: name a principal that does not.`, { field: 'principal' });
        try {
          await this.approvals.grant(other, gateId);
        } catch (e) {
          if (!(e instanceof ForbiddenError)) throw e;
          const payload = { principal: other.principal, action: 'approvals:respond', resource: gateId, allowed: false, reason: grants.size ? 'scope-missing' : 'unseeded-principal' };
          await this.events.append(p, HOST_STREAM, 'authorization.decided', payload, { correlationId: runId });
          event = { type: 'authorization.decided', payload };
        }
        break;
      }
      case 'grant':
      case 'quorum':
        await this.approvals.grant(p, gateId);
        event = await this.last(p, runId, 'approval.granted');
        break;
      case 'reject':
        await this.approvals.deny(p, gateId, body.reason);
        event = await this.last(p, runId, 'approval.rejected');
        break;
      case 'override':
        await this.approvals.vote(p, gateId, 'granted', { reason: body.reason, override: true });
        event = await this.last(p, runId, 'approval.overridden');
        break;
    }
    const state = (await this.approvals.get(p, gateId)).state;
    return { released: state === 'granted', event, runId, gateId, state };
  }

  private async openGate(p: Principal, runId: string): Promise<string> {
    const until = Date.now() + OPEN_WAIT_MS;
    for (;;) {
      const gate = await this.approvals.pendingOfRunNode(p, runId, 'gate');
      if (gate) return gate.id;
      if (Date.now() > until) throw new UnprocessableError('gate_not_opened', `The fixture run ${runId} opened no gate within ${OPEN_WAIT_MS} ms.`, { runId });
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The latest event of this type the host emitted for the run's gate. */
  private async last(p: Principal, runId: string, type: string): Promise<GateOutcome['event']> {
    const found = await this.events.read(p, HOST_STREAM, { correlationId: runId, type });
    const e = found[found.length - 1];
    return e ? { type: e.type, payload: e.payload } : null;
  }
}
