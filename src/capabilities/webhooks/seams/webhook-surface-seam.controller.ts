import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { NotFoundError, ValidationError } from '../../../platform/errors/domain-error';
import { AnyScope, CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import { WEBHOOK_MANAGERS } from '../webhook-scopes';
import { IDENTIFIER, type Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { WebhookSurfaceBody } from '../webhooks.dto';
import { SURFACE_RESULT } from '../webhooks.openapi';
import { WebhooksService } from '../webhooks.service';

function strings(v: unknown, field: string): string[] {
  if (!Array.isArray(v) || !v.length || !v.every((x) => typeof x === 'string')) throw new ValidationError(`args.${field} must be a non-empty array of strings`);
  return v as string[];
}

/**
 * Who the seam acts as: the caller itself when the body names its own tenant, else the caller's
 * sandbox tenant of that name (never another real tenant: the credential decides whose data this is).
 */
function actingPrincipal(p: Principal, tenantId: string): Principal {
  if (tenantId === p.tenant) return p;
  if (!IDENTIFIER.test(tenantId)) throw new ValidationError('tenantId must be 1-128 letters, digits and ._:@- starting with a letter or digit', { field: 'tenantId' });
  const base = p.workspace ? `${p.tenant}/${p.workspace}` : p.tenant;
  return { ...p, tenant: `${base}/seam/${tenantId}`, workspace: undefined };
}

/**
 * The reference-host seam `POST /v1/host/sample/test/surface` for `surface: "webhooks"`
 * (webhook-tenant-isolation): register, list and unregister through the same service (and the same
 * URL guard) as the normative routes, as the caller: in its own tenant and, for a workspace-bound
 * credential, its own workspace. The scenario names two made-up tenants (`tenant-a`, `tenant-b`)
 * with one key; a `tenantId` other than the caller's own is a sandbox tenant of the caller's:
 * `<caller tenant>/seam/<tenantId>` (no real tenant id contains `/`, see IDENTIFIER), so the
 * scenario's two-tenant proof runs on the host's real tenant boundary while no body can reach a
 * tenant the credential is not in. Seams on only.
 */
@ApiTags('test-seams')
@Controller()
export class WebhookSurfaceSeamController {
  constructor(private readonly webhooks: WebhooksService) {}

  @TestSeam()
  @Scopes('runs:read')
  @AnyScope(...WEBHOOK_MANAGERS)
  @Post('/v1/host/sample/test/surface')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamTestSurface', summary: "(test seam) Act on a tenant-owned surface (webhooks: register | list | unregister) in the caller's own tenant or a sandbox tenant of the caller's" })
  @ApiBody({ type: WebhookSurfaceBody })
  @ApiOkResponse({ schema: SURFACE_RESULT })
  @ApiErrors(400, 401, 403, 404)
  async surface(@CurrentPrincipal() p: Principal, @Body() body: WebhookSurfaceBody): Promise<Record<string, unknown>> {
    if (body.surface !== 'webhooks') throw new NotFoundError(`The surface "${body.surface}" is not served by this seam.`);
    p = actingPrincipal(p, body.tenantId);
    const args = body.args ?? {};
    switch (body.op) {
      case 'register': {
        if (typeof args.url !== 'string') throw new ValidationError('args.url must be a string');
        const tags = args.tags === undefined ? undefined : strings(args.tags, 'tags');
        const reg = await this.webhooks.register(p, { url: args.url, events: strings(args.events, 'events'), tags });
        return { webhookId: reg.webhookId, secretFingerprint: reg.secretFingerprint };
      }
      case 'list':
        return { webhooks: await this.webhooks.list(p) };
      case 'unregister':
        if (typeof args.webhookId !== 'string') throw new ValidationError('args.webhookId must be a string');
        await this.webhooks.unregister(p, args.webhookId);
        return { unregistered: true };
    }
  }
}
