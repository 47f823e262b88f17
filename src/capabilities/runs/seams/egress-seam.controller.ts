import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { IsIn } from 'class-validator';
import { randomBytes, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { ConnectionsService } from '../../connections';
import type { EgressDecided } from '../../connections';
import { NodeHttpBinder } from '../engine/node-http';

const SCENARIOS = ['out-of-audience', 'provenance-unevaluable', 'canary'] as const;
type Scenario = (typeof SCENARIOS)[number];

class EgressDecideBody {
  @ApiProperty({ enum: SCENARIOS })
  @IsIn(SCENARIOS)
  scenario: Scenario;
}

/** The built-in provider the seam's connections use: its apiHosts (api.github.com, api.githubcopilot.com) are the credential's audiences. */
const PROVIDER = 'github';
/** A destination outside those audiences (never looked up: the decision stops the call before any resolution). */
const OUTSIDE = 'https://egress-audience-b.example/v1/resource?q=1';

/**
 * `POST /v1/host/sample/egress/decide {scenario}` (egress-audience-binding, egress-decision-content-free): one
 * `ctx.http.safeFetch` with a connection credential of the caller's tenant, decided by the host's real RFC 0079
 * policy and audited. It creates a connection of the built-in `github` provider (audiences: its apiHosts) for the
 * call and deletes it after:
 * - `out-of-audience`: the credential aimed at a host outside its audiences (denied, never attached);
 * - `provenance-unevaluable`: a connection imported without its credential (nothing to bind: denied, fail closed);
 * - `canary`: as out-of-audience with a canary as the credential; `canaryLeaked` says whether it appears in
 *   anything the call produced (the decisions and the refusal the node would see).
 * Answers the last `egress.decided` payload with `credentialAttached` and `canaryLeaked`.
 */
@ApiTags('test-seams')
@Controller()
export class EgressSeamController {
  constructor(
    private readonly http: NodeHttpBinder,
    private readonly connections: ConnectionsService,
    private readonly ds: DataSource,
  ) {}

  @TestSeam()
  @Scopes('connections:manage')
  @Post('/v1/host/sample/egress/decide')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamEgressDecide', summary: '(test seam) RFC 0079: one credentialed safe fetch decided by the egress policy: the egress.decided payload, credentialAttached, canaryLeaked' })
  @ApiBody({ type: EgressDecideBody })
  @ApiOkResponse({
    schema: {
      type: 'object',
      required: ['decision', 'destination', 'credentialAttached', 'canaryLeaked'],
      properties: {
        decision: { type: 'string', enum: ['allowed', 'denied', 'downgraded'] },
        destination: { type: 'string' },
        reason: { type: 'string' },
        credentialId: { type: 'string' },
        auditCorrelationId: { type: 'string' },
        credentialAttached: { type: 'boolean' },
        canaryLeaked: { type: 'boolean' },
      },
    },
  })
  @ApiErrors(400, 401, 403)
  async decide(@CurrentPrincipal() p: Principal, @Body() body: EgressDecideBody): Promise<Record<string, unknown>> {
    const name = `egress-seam-${randomUUID().slice(0, 8)}`;
    const secret = body.scenario === 'canary' ? `egress-canary-${randomUUID()}` : randomBytes(24).toString('base64url');
    const id =
      body.scenario === 'provenance-unevaluable'
        ? (await this.ds.transaction((m) => this.connections.importReference(p, { name, provider: PROVIDER }, m))).id
        : (await this.connections.create(p, { provider: PROVIDER, name, credential: secret })).id;
    const decisions: EgressDecided[] = [];
    try {
      const outcome = await this.http.fetch(p, OUTSIDE, { credential: name }, undefined, async (d) => void decisions.push(d));
      const last = decisions[decisions.length - 1];
      const seen = JSON.stringify({ decisions, outcome });
      return {
        ...(last ?? { decision: 'denied', destination: 'unknown' }),
        credentialAttached: last?.decision === 'allowed',
        canaryLeaked: seen.includes(secret),
      };
    } finally {
      await this.connections.delete(p, id);
    }
  }
}
