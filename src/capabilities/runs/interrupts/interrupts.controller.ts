import { Body, Controller, Get, HttpCode, Param, Post, Req } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ValidationError } from '../../../platform/errors/domain-error';
import { requestMajor } from '../../../platform/http/protocol-version';
import { CurrentPrincipal, Public, Scopes } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { ResolveInterruptBody } from './interrupts.dto';
import { InterruptsService, ResolveAnswer } from './interrupts.service';
import { CredentialInterrupts } from './credential-interrupts.service';

const RESOLVE_ANSWER = {
  type: 'object',
  required: ['runId', 'nodeId', 'interruptId', 'status', 'interruptState'],
  properties: {
    runId: { type: 'string' },
    nodeId: { type: 'string' },
    interruptId: { type: 'string' },
    status: { type: 'string', description: 'The run’s status after the resolution (still `waiting-approval` while a quorum is not met).' },
    interruptState: { type: 'string', enum: ['pending', 'resolved', 'rejected'], description: '`pending`: the vote was recorded and the quorum is not met yet.' },
  },
};
const DECIDE_BODY = {
  type: 'object',
  required: ['action'],
  properties: { action: { type: 'string', enum: ['accept', 'reject'] }, voter: { type: 'string' }, feedback: { type: 'string' } },
  additionalProperties: false,
};
const TOKEN_BODY = { type: 'object', required: ['resumeValue'], properties: { resumeValue: {} }, additionalProperties: false };
const TOKEN_PARAM = { name: 'token', description: 'The signed token of an external-event interrupt (`interrupt.interruptToken` of the run snapshot): `base64url(payload).base64url(hmac_sha256)`, or under major 2 `ow2.hs256.<kid>.<payload>.<mac>` (a token under another alg or kid is 401 interrupt_token_invalid).' };

/**
 * Interrupts (interrupt.md): resolve a suspended run step by run (`approvals:respond`) or, for an
 * external event, by its signed token (the token is the credential; single use, expiring).
 */
@ApiTags('interrupts')
@Controller()
export class InterruptsController {
  constructor(
    private readonly interrupts: InterruptsService,
    private readonly credentials: CredentialInterrupts,
  ) {}

  @Scopes('runs:create')
  @Get('/v1/runs/:runId/interrupts/:nodeId/connect')
  @ApiOperation({
    operationId: 'connectCredentialInterrupt',
    summary: "A credential interrupt's connectUrl (RFC 0199 §C.3): starts the caller's OAuth grant for the provider and scopes the step waits on; the run's starter only",
    description: 'Answers the provider URL to send the person to; once the grant is stored the host resolves the interrupt itself. 403 for anyone but the run’s starter, 404 when no credential interrupt waits at the step (or the run is not the caller’s tenant’s), 422 oauth_provider_unsupported when the host has no OAuth client for the provider.',
  })
  @ApiParam({ name: 'runId' })
  @ApiParam({ name: 'nodeId' })
  @ApiOkResponse({ schema: { type: 'object', required: ['authorizationUrl', 'expiresAt', 'scopes'], properties: { authorizationUrl: { type: 'string' }, expiresAt: { type: 'string' }, scopes: { type: 'array', items: { type: 'string' } } } } })
  @ApiErrors(401, 403, 404, 422)
  connect(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Param('nodeId') nodeId: string): Promise<{ authorizationUrl: string; expiresAt: string; scopes: string[] }> {
    return this.credentials.connect(p, runId, nodeId);
  }

  @Scopes('approvals:respond')
  @Post('/v1/runs/:runId/interrupts/:nodeId')
  @HttpCode(200)
  @ApiOperation({ operationId: 'resolveInterruptByRun', summary: 'Resolve (or vote on) the pending interrupt of a run step' })
  @ApiParam({ name: 'runId' })
  @ApiParam({ name: 'nodeId' })
  @ApiBody({ type: ResolveInterruptBody })
  @ApiOkResponse({ schema: RESOLVE_ANSWER })
  @ApiErrors(400, 401, 403, 404, 409, 422)
  resolve(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Param('nodeId') nodeId: string, @Body() body: ResolveInterruptBody, @Req() req: unknown): Promise<ResolveAnswer> {
    return this.interrupts.resolveByRun(p, runId, nodeId, body.resumeValue, requestMajor(req));
  }

  @Scopes('approvals:respond')
  @Post('/v1/runs/:runId/approvals/:nodeId')
  @HttpCode(200)
  @ApiOperation({ operationId: 'decideRunApproval', summary: 'Accept or reject the approval gate of a run step (the body is the approval resume value)' })
  @ApiParam({ name: 'runId' })
  @ApiParam({ name: 'nodeId' })
  @ApiBody({ schema: DECIDE_BODY })
  @ApiOkResponse({ schema: RESOLVE_ANSWER })
  @ApiErrors(400, 401, 403, 404, 409)
  decide(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Param('nodeId') nodeId: string, @Body() body: Record<string, unknown>, @Req() req: unknown): Promise<ResolveAnswer> {
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new ValidationError('The body must be an object {action}.', { field: 'action' });
    return this.interrupts.decideByRun(p, runId, nodeId, body, requestMajor(req));
  }

  @Scopes('approvals:respond')
  @Post('/v1/approvals/:id/resolve')
  @HttpCode(200)
  @ApiOperation({ operationId: 'resolveApproval', summary: 'Resolve the interrupt of a run step by its gate id with a resume value (a clarification’s answers, an external event, an approval’s {action})' })
  @ApiParam({ name: 'id', description: 'Approval gate id' })
  @ApiBody({ type: ResolveInterruptBody })
  @ApiOkResponse({ schema: RESOLVE_ANSWER })
  @ApiErrors(400, 401, 403, 404, 409, 422)
  resolveGate(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Body() body: ResolveInterruptBody): Promise<ResolveAnswer> {
    return this.interrupts.resolveById(p, id, body.resumeValue);
  }

  @Public()
  @Get('/v1/interrupts/:token')
  @ApiOperation({ operationId: 'inspectInterruptByToken', summary: 'Inspect the interrupt a signed token names (its InterruptPayload), without resolving it' })
  @ApiParam(TOKEN_PARAM)
  @ApiOkResponse({ schema: { type: 'object', required: ['kind', 'key', 'data'], properties: { kind: { type: 'string' }, key: { type: 'string' }, resumeSchema: { type: 'object' }, timeoutMs: { type: 'integer' }, data: { type: 'object' } } } })
  @ApiErrors(400, 404, 409, 410)
  inspect(@Param('token') token: string): Promise<Record<string, unknown>> {
    return this.interrupts.inspect(token);
  }

  @Public()
  @Post('/v1/interrupts/:token')
  @HttpCode(200)
  @ApiOperation({ operationId: 'resolveInterruptByToken', summary: 'Resolve an external-event interrupt with its signed token (single use)' })
  @ApiParam(TOKEN_PARAM)
  @ApiBody({ schema: TOKEN_BODY })
  @ApiOkResponse({ schema: RESOLVE_ANSWER })
  @ApiErrors(400, 404, 409, 410, 422)
  resolveByToken(@Param('token') token: string, @Body() body: Record<string, unknown>, @Req() req: unknown): Promise<ResolveAnswer> {
    return this.interrupts.resolveByTokenRequest(token, body, requestMajor(req));
  }
}
