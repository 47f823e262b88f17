import { Body, Controller, HttpCode, Post, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { submittedText } from '../../../platform/http/json-text';
import { requestedMajor } from '../../../platform/http/protocol-version';
import { rawBodyText } from '../../../platform/http/verbatim-json.interceptor';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { DomainError } from '../../../platform/errors/domain-error';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { SeamConsentPlanBody, SeamCredentialEchoBody, SeamEgressCheckBody, SeamInstallBody, SeamResolveBody } from '../connections.dto';
import { CONSENT_PLAN, CREDENTIAL_ECHO_SURFACES, EGRESS_DECISION, PROVIDER_RESOLUTION, SEAM_INSTALL_RESULT } from '../connections.openapi';
import { ConnectionPacksService, ProviderResolution } from '../packs/connection-packs.service';
import type { ConsentPlan } from '../packs/consent-plan';
import type { EgressDecision } from '../packs/egress-check';
import { CredentialEchoService, CredentialEchoSurfaces } from './credential-echo.service';

/**
 * The conformance seams of host-sample-test-seams.md §10, answered by the same service methods as
 * the normative routes. Refusals are data (200) as the official scenarios expect.
 */
@ApiTags('connections')
@Controller()
export class ConnectionPackSeamsController {
  constructor(
    private readonly packs: ConnectionPacksService,
    private readonly echo: CredentialEchoService,
  ) {}

  /** RFC 0046 §C.1 probe (`credential-payload-redaction`): resolve a seeded canary credential; only its reference comes back. */
  @TestSeam()
  @Scopes('connections:manage')
  @Post('/v1/host/sample/credentials/echo')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamCredentialEcho', summary: '(test seam) Resolve a seeded credential in an echo run and return the run\'s observable surfaces' })
  @ApiBody({ type: SeamCredentialEchoBody })
  @ApiOkResponse({ schema: CREDENTIAL_ECHO_SURFACES })
  @ApiErrors(400, 401, 403, 404, 503)
  credentialEcho(@CurrentPrincipal() p: Principal, @Body() body: SeamCredentialEchoBody): Promise<CredentialEchoSurfaces> {
    return this.echo.echo(p, body.canary);
  }

  @TestSeam()
  @Scopes('connections:manage')
  @Post('/v1/host/sample/connection-packs/install')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamInstallConnectionPack', summary: '(test seam) Install a connection pack: {installed, errors?}' })
  @ApiBody({ type: SeamInstallBody })
  @ApiOkResponse({ schema: SEAM_INSTALL_RESULT })
  @ApiErrors(400, 401, 403, 404)
  install(@CurrentPrincipal() p: Principal, @Body() body: SeamInstallBody, @Req() req: FastifyRequest): Promise<{ installed: boolean; errors?: Array<{ code: string; path?: string; message: string }> }> {
    const raw = rawBodyText(req);
    // Seams have no major of their own; under the v2 seams profile the suite names major 2, whose provider identity applies.
    const asked = req.headers['openwop-version'];
    const major = requestedMajor(Array.isArray(asked) ? asked[0] : (asked ?? '1'));
    return this.packs.installForSeam(p, body.manifest, raw === undefined ? undefined : submittedText(raw, 'manifest', body.manifest), major === 2 ? 2 : 1);
  }

  @TestSeam()
  @Scopes('connections:read')
  @Post('/v1/host/sample/connection-packs/resolve')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamResolveConnectionProvider', summary: '(test seam) Resolve a provider id, optionally against a simulated built-in version' })
  @ApiBody({ type: SeamResolveBody })
  @ApiOkResponse({ schema: PROVIDER_RESOLUTION })
  @ApiErrors(400, 401, 403, 404)
  async resolve(@CurrentPrincipal() p: Principal, @Body() body: SeamResolveBody): Promise<Omit<ProviderResolution, 'provider'>> {
    const r = await this.packs.resolve(p, body.provider, body.simulateBuiltinVersion);
    if (!r.resolved) return r;
    const { provider: _definition, ...rest } = r;
    return rest;
  }

  @TestSeam()
  @Scopes('connections:read')
  @Post('/v1/host/sample/connection-packs/consent-plan')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamConnectionConsentPlan', summary: '(test seam) Consent plan; 422 connection_provider_unresolved / connection_provider_conflict' })
  @ApiBody({ type: SeamConsentPlanBody })
  @ApiOkResponse({ schema: CONSENT_PLAN })
  @ApiErrors(400, 401, 403, 404, 422)
  async consentPlan(@CurrentPrincipal() p: Principal, @Body() body: SeamConsentPlanBody): Promise<ConsentPlan & { providerId: string }> {
    try {
      return await this.packs.consentPlan(p, body.provider, body.requested);
    } catch (e) {
      // The seam reports resolution failures as 422 (host-sample-test-seams.md §10), not 404/409.
      if (e instanceof DomainError && (e.code === 'connection_provider_unresolved' || e.code === 'connection_provider_conflict')) {
        throw new DomainError(e.code, 422, e.message, e.details);
      }
      throw e;
    }
  }

  @TestSeam()
  @Scopes('connections:read')
  @Post('/v1/host/sample/connection-packs/egress-check')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamConnectionEgressCheck', summary: '(test seam) May a credential of the provider be sent to requestHost?' })
  @ApiBody({ type: SeamEgressCheckBody })
  @ApiOkResponse({ schema: EGRESS_DECISION })
  @ApiErrors(400, 401, 403, 404)
  egress(@CurrentPrincipal() p: Principal, @Body() body: SeamEgressCheckBody): Promise<EgressDecision | { allowed: false; code: string }> {
    return this.packs.egressCheck(p, body.provider, body.requestHost);
  }
}
