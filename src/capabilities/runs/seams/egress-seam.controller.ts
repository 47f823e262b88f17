import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { IsIn } from '../../../platform/http/dto-validation';
import { randomBytes, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { ConnectionPacksService, ConnectionsService } from '../../connections';
import type { EgressDecided } from '../../connections';
import { NodeHttpBinder } from '../engine/node-http';

const SCENARIOS = ['out-of-audience', 'provenance-unevaluable', 'canary'] as const;
type Scenario = (typeof SCENARIOS)[number];

class EgressDecideBody {
  @ApiProperty({ enum: SCENARIOS })
  @IsIn(SCENARIOS)
  scenario: Scenario;
}

/** The audience of the seam's credential, and a destination outside it (never looked up: the decision stops the call first). */
const AUDIENCE = 'api.egress-audience-a.example';
const OUTSIDE = 'https://egress-audience-b.example/v1/resource?q=1';

/** A connection pack of the caller's tenant whose provider declares `AUDIENCE` as its only apiHost. */
function seamPack(suffix: string): Record<string, unknown> {
  return {
    name: `private.openwop-host.egress-seam-${suffix}`,
    version: '1.0.0',
    kind: 'connection',
    engines: { openwop: '>=1.0.0 <3.0.0' },
    provider: { id: `egress-seam-${suffix}`, displayName: 'Egress seam', category: 'dev', auth: { kind: 'bearer' }, reach: { openapi: { ref: `https://${AUDIENCE}/openapi.json` } }, apiHosts: [AUDIENCE] },
  };
}

/**
 * `POST /v1/host/sample/egress/decide {scenario}` (egress-audience-binding, egress-decision-content-free): one
 * `ctx.http.safeFetch` with a connection credential of the caller's tenant, decided by the host's real RFC 0079
 * policy and audited. For the call it installs, in the caller's tenant, a connection pack whose provider's only
 * apiHost is `api.egress-audience-a.example` (the credential's audience) and a connection of it, and removes both
 * after:
 * - `out-of-audience`: the credential aimed at another host (denied, never attached);
 * - `provenance-unevaluable`: the connection imported without its credential (nothing to bind: denied, fail closed);
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
    private readonly packs: ConnectionPacksService,
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
    const suffix = randomUUID().slice(0, 8);
    const name = `egress-seam-${suffix}`;
    const secret = body.scenario === 'canary' ? `egress-canary-${randomUUID()}` : randomBytes(24).toString('base64url');
    const { pack } = await this.packs.install(p, seamPack(suffix), 'seam');
    let id: string | undefined;
    try {
      id =
        body.scenario === 'provenance-unevaluable'
          ? (await this.ds.transaction((m) => this.connections.importReference(p, { name, provider: pack.providerId }, m))).id
          : (await this.connections.create(p, { provider: pack.providerId, name, credential: secret })).id;
      return await this.once(p, name, secret);
    } finally {
      if (id) await this.connections.delete(p, id);
      await this.packs.uninstall(p, pack.name);
    }
  }

  private async once(p: Principal, name: string, secret: string): Promise<Record<string, unknown>> {
    const decisions: EgressDecided[] = [];
    const outcome = await this.http.fetch(p, OUTSIDE, { credential: name }, undefined, async (d) => void decisions.push(d));
    const last = decisions[decisions.length - 1];
    const seen = JSON.stringify({ decisions, outcome });
    return {
      ...(last ?? { decision: 'denied', destination: 'unknown' }),
      credentialAttached: last?.decision === 'allowed',
      canaryLeaked: seen.includes(secret),
    };
  }
}
