import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ApiBody, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsIP, IsObject, IsOptional, IsString, MaxLength } from '../../../platform/http/dto-validation';
import { SafeFetchError, SafeFetchInit, SafeFetchResponse } from '@openwop-host/plugin-sdk';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { NodeHttpBinder } from '../engine/node-http';
import { auditedHttp } from '../engine/node-http-audit';
import { RunCreationService } from '../run-creation.service';
import { SAFE_FETCH_RUN_WORKFLOW } from '../workflow-resolver.service';
import { settledStatus } from './settled-status';

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

class SafeFetchRunBody {
  @ApiProperty({ maxLength: 2048 })
  @IsString()
  @MaxLength(2048)
  url: string;
}

/**
 * `POST /v1/host/sample/http/safe-fetch {url, simulateRebindTo?, init?}` (safefetch-behavior): one call of the
 * `ctx.http.safeFetch` node executors get, with the caller's tenant, answered as `{outcome: "fetched", status}` or
 * `{outcome: "blocked", blocked: "ssrf" | "upgrade" | "allowlist" | "limit" | "network", reason}`, with the audit
 * pair the call would append to a run's log (`toolCalled`, `toolReturned`: there is no run here, so it is answered).
 *
 * `POST /v1/host/sample/http/safe-fetch-run {url}` (safefetch-live-audit): the same call made inside a real run (the
 * `core.http.request` node of a seam chain, through the ctx.http every executor gets), waited for, answered
 * `{runId, outcome}`; the run's log holds the durable audit pair.
 */
@ApiTags('test-seams')
@Controller()
export class SafeFetchSeamController {
  constructor(
    private readonly http: NodeHttpBinder,
    private readonly creation: RunCreationService,
    private readonly ds: DataSource,
  ) {}

  @TestSeam()
  @Scopes('runs:create')
  @Post('/v1/host/sample/http/safe-fetch')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamSafeFetch', summary: "(test seam) RFC 0076 §B: one ctx.http.safeFetch call: {outcome, status?, blocked?, reason?}" })
  @ApiBody({ type: SafeFetchSeamBody })
  @ApiOkResponse({
    schema: {
      type: 'object',
      required: ['outcome', 'toolCalled', 'toolReturned'],
      properties: {
        outcome: { type: 'string', enum: ['fetched', 'blocked'] },
        status: { type: 'integer' },
        blocked: { type: 'string' },
        reason: { type: 'string' },
        toolCalled: { type: 'object', additionalProperties: true },
        toolReturned: { type: 'object', additionalProperties: true },
      },
    },
  })
  @ApiErrors(400, 401, 403)
  async fetch(@CurrentPrincipal() p: Principal, @Body() body: SafeFetchSeamBody): Promise<Record<string, unknown>> {
    const rebind = body.simulateRebindTo;
    const resolver = rebind ? async () => [{ address: rebind, family: rebind.includes(':') ? 6 : 4 }] : undefined;
    // The call as a node makes it (the same audit wrapper), its pair collected instead of appended to a run's log.
    const pair: Record<string, Record<string, unknown>> = {};
    const http = auditedHttp(
      {
        safeFetch: async (url, init) => {
          const o = await this.http.fetch(p, url, init, resolver);
          if (!o.ok) throw new SafeFetchError(o.refusal, o.reason);
          return o.response;
        },
      },
      p.principal,
      async (type, payload) => {
        pair[type === 'agent.toolCalled' ? 'toolCalled' : 'toolReturned'] = payload;
        return { eventId: '' };
      },
    );
    let res: SafeFetchResponse;
    try {
      res = await http.safeFetch(body.url, (body.init ?? {}) as SafeFetchInit);
    } catch (e) {
      if (!(e instanceof SafeFetchError)) throw e;
      return { outcome: 'blocked', blocked: e.refusal, reason: e.message, ...pair };
    }
    return { outcome: 'fetched', status: res.status, ...pair };
  }

  @TestSeam()
  @Scopes('runs:create')
  @Post('/v1/host/sample/http/safe-fetch-run')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamSafeFetchRun', summary: '(test seam) RFC 0076 §B: one ctx.http.safeFetch inside a real run, to its end: {runId, outcome}' })
  @ApiBody({ type: SafeFetchRunBody })
  @ApiOkResponse({ schema: { type: 'object', required: ['runId', 'outcome'], properties: { runId: { type: 'string' }, outcome: { type: 'string', enum: ['fetched', 'blocked'] }, status: { type: 'string' } } } })
  @ApiErrors(400, 401, 403)
  async fetchInRun(@CurrentPrincipal() p: Principal, @Body() body: SafeFetchRunBody): Promise<{ runId: string; outcome: 'fetched' | 'blocked'; status: string }> {
    const { snapshot } = await this.creation.create(p, { workflowId: SAFE_FETCH_RUN_WORKFLOW, inputs: { url: body.url } });
    const status = await settledStatus(this.ds.manager, p, snapshot.runId, snapshot.status);
    // The node completes only when the fetch was answered; a refused (or failed) fetch fails it.
    return { runId: snapshot.runId, outcome: status === 'completed' ? 'fetched' : 'blocked', status };
  }
}
