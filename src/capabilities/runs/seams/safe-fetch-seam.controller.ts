import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsIP, IsObject, IsOptional, IsString, MaxLength } from 'class-validator';
import type { SafeFetchInit } from '@openwop-host/plugin-sdk';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { NodeHttpBinder } from '../engine/node-http';

class SafeFetchSeamBody {
  @ApiProperty({ maxLength: 2048 })
  @IsString()
  @MaxLength(2048)
  url: string;

  @ApiPropertyOptional({ description: 'Answer every name lookup of the call with this address (a DNS rebinding).' })
  @IsOptional()
  @IsIP()
  simulateRebindTo?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'SafeFetchInit: method, headers, body, timeoutMs, maxResponseBytes, maxRedirects, connection.' })
  @IsOptional()
  @IsObject()
  init?: Record<string, unknown>;
}

/**
 * `POST /v1/host/sample/http/safe-fetch {url, simulateRebindTo?, init?}` (safefetch-behavior): one call of the
 * `ctx.http.safeFetch` node executors get, with the caller's tenant, answered as `{outcome: "fetched", status}` or
 * `{outcome: "blocked", blocked: "ssrf" | "upgrade" | "allowlist" | "limit" | "network", reason}`.
 */
@ApiTags('test-seams')
@Controller()
export class SafeFetchSeamController {
  constructor(private readonly http: NodeHttpBinder) {}

  @TestSeam()
  @Scopes('runs:create')
  @Post('/v1/host/sample/http/safe-fetch')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamSafeFetch', summary: "(test seam) RFC 0076 §B: one ctx.http.safeFetch call: {outcome, status?, blocked?, reason?}" })
  @ApiBody({ type: SafeFetchSeamBody })
  @ApiOkResponse({ schema: { type: 'object', required: ['outcome'], properties: { outcome: { type: 'string', enum: ['fetched', 'blocked'] }, status: { type: 'integer' }, blocked: { type: 'string' }, reason: { type: 'string' } } } })
  @ApiErrors(400, 401, 403)
  async fetch(@CurrentPrincipal() p: Principal, @Body() body: SafeFetchSeamBody): Promise<Record<string, unknown>> {
    const rebind = body.simulateRebindTo;
    const resolver = rebind ? async () => [{ address: rebind, family: rebind.includes(':') ? 6 : 4 }] : undefined;
    const o = await this.http.fetch(p, body.url, (body.init ?? {}) as SafeFetchInit, resolver);
    return o.ok ? { outcome: 'fetched', status: o.response.status } : { outcome: 'blocked', blocked: o.refusal, reason: o.reason };
  }
}
