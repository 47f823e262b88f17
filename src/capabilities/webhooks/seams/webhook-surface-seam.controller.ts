import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { NotFoundError, ValidationError } from '../../../platform/errors/domain-error';
import { AnyScope, CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import { WEBHOOK_MANAGERS } from '../webhooks.controller';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { WebhookSurfaceBody } from '../webhooks.dto';
import { SURFACE_RESULT } from '../webhooks.openapi';
import { WebhooksService } from '../webhooks.service';

function strings(v: unknown, field: string): string[] {
  if (!Array.isArray(v) || !v.length || !v.every((x) => typeof x === 'string')) throw new ValidationError(`args.${field} must be a non-empty array of strings`);
  return v as string[];
}

/**
 * The reference-host seam `POST /v1/host/sample/test/surface` for `surface: "webhooks"`
 * (webhook-tenant-isolation): register, list and unregister through the same service (and the same
 * URL guard) as the normative routes, as the caller: in its own tenant and, for a workspace-bound
 * credential, its own workspace. The body's `tenantId` must name the caller's tenant; another
 * tenant answers 404 like an unknown one and nothing is done. Seams on only.
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
  @ApiOperation({ operationId: 'seamTestSurface', summary: "(test seam) Act on a tenant-owned surface (webhooks: register | list | unregister) in the caller's own tenant" })
  @ApiBody({ type: WebhookSurfaceBody })
  @ApiOkResponse({ schema: SURFACE_RESULT })
  @ApiErrors(400, 401, 403, 404)
  async surface(@CurrentPrincipal() p: Principal, @Body() body: WebhookSurfaceBody): Promise<Record<string, unknown>> {
    // The credential decides whose data this is: a tenant the caller is not in looks like an unknown one.
    if (body.tenantId !== p.tenant) throw new NotFoundError('No such tenant.');
    if (body.surface !== 'webhooks') throw new NotFoundError(`The surface "${body.surface}" is not served by this seam.`);
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
