import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Scopes } from '../../../platform/identity/decorators';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { effectSeamManifest } from './effect-seams';

const MANIFEST_SCHEMA = {
  type: 'object',
  required: ['manifestVersion', 'host', 'seams'],
  properties: {
    manifestVersion: { type: 'string', enum: ['1'] },
    host: { type: 'object', properties: { name: { type: 'string' }, build: { type: 'object', properties: { kind: { type: 'string' }, id: { type: 'string' } } } } },
    seams: {
      type: 'array',
      items: {
        type: 'object',
        required: ['seam', 'kind', 'guarded', 'guardedBy'],
        properties: { seam: { type: 'string' }, kind: { type: 'string' }, guarded: { type: 'boolean' }, guardedBy: { type: 'string' }, branchReFires: { type: 'boolean' }, note: { type: 'string' } },
      },
    },
  },
};

/**
 * `GET /v1/host/effect-seams` (`GET /host/effect-seams` under major 2, where the `replay` record
 * names it): the effect-seam manifest, the same at both majors.
 */
@ApiTags('runs')
@Controller()
export class EffectSeamsController {
  private manifest?: Record<string, unknown>;

  @Scopes('runs:read')
  @Get('/v1/host/effect-seams')
  @ApiOperation({ operationId: 'getEffectSeamManifest', summary: 'The effect-seam manifest: every outbound effect path the node runtime reaches and what keeps a replay fork from re-firing it' })
  @ApiOkResponse({ schema: MANIFEST_SCHEMA })
  @ApiErrors(401, 403)
  get(): Record<string, unknown> {
    this.manifest ??= effectSeamManifest();
    return this.manifest;
  }
}
