import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import { MCP_MOUNT_PATH } from '../../../platform/config/mcp-mount-settings';
import { DomainError, ForbiddenError, NotFoundError } from '../../../platform/errors/domain-error';
import { UUID } from '../../../platform/ids';
import type { Principal } from '../../../platform/identity/principal';
import { ApprovalsService } from '../../approvals';
import { ConnectionChangeNotifier, OAuthService } from '../../connections';
import { InterruptsService } from './interrupts.service';

/** The resume value of a `credential` interrupt (RFC 0199 §C.4): an outcome, never a credential. */
export const CREDENTIAL_RESUME_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['outcome'],
  properties: { outcome: { enum: ['authorized', 'declined'] } },
};

/** How many waiting runs of a tenant one pass re-checks after its connections changed. */
const SWEEP_LIMIT = 200;

/**
 * `credential` interrupts (RFC 0199 §C): where a person authorizes the credential a run waits on
 * (`connectUrl`, the host's own route, which needs the run's starter signed in and embeds no token),
 * and their resolution by the host itself once a credential resolves for the starter, provider and
 * scopes: after any grant of the tenant is stored (the connections capability says its connections
 * changed), and on an MCP client's retry (`settle`). Nobody's word resolves one: the host re-checks.
 */
@Injectable()
export class CredentialInterrupts implements OnModuleInit {
  private readonly logger = new Logger('credential-interrupts');

  constructor(
    private readonly ds: DataSource,
    private readonly approvals: ApprovalsService,
    private readonly interrupts: InterruptsService,
    private readonly oauth: OAuthService,
    private readonly notifier: ConnectionChangeNotifier,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  onModuleInit(): void {
    this.notifier.subscribe((tenant) => void this.sweep(tenant).catch((e: unknown) => this.logger.error({ msg: 'credential interrupt sweep failed', tenant, err: e })));
  }

  /**
   * The host's own origin for the connect URL: OPENWOP_PUBLIC_URL, else the origin of the OAuth callback URL (both
   * public URLs of this host), else the address it listens on (development).
   */
  base(): string {
    const mount = this.config.mcpMount.url;
    if (mount?.endsWith(MCP_MOUNT_PATH)) return mount.slice(0, mount.length - MCP_MOUNT_PATH.length);
    const callback = this.oauth.client.settings.callbackUrl;
    if (callback) return new URL(callback).origin;
    const host = ['0.0.0.0', '::', ''].includes(this.config.host) ? '127.0.0.1' : this.config.host.includes(':') ? `[${this.config.host}]` : this.config.host;
    return `http://${host}:${this.config.port}`;
  }

  /** The connect URL of a run step's credential interrupt: the route that starts the starter's grant. */
  connectUrl(runId: string, nodeId: string): string {
    return `${this.base()}/v1/runs/${encodeURIComponent(runId)}/interrupts/${encodeURIComponent(nodeId)}/connect`;
  }

  /** Why no credential resolves for the run's starter (or `ok`), and its reference when one exists. */
  status(p: { tenant: string; principal: string }, provider: string, scopes: readonly string[]) {
    return this.oauth.credentialStatus(p, provider, scopes);
  }

  /**
   * Resolves the run step's pending credential interrupt with `{outcome: "authorized"}` when a credential now
   * resolves (the host's re-check); answers whether it did. A step whose interrupt is not a pending
   * credential one answers false.
   */
  async settle(tenant: string, runId: string, nodeId: string): Promise<boolean> {
    const gate = (await this.approvals.pendingOfRun(tenant, runId)).find((g) => g.nodeId === nodeId && g.kind === 'credential');
    if (!gate) return false;
    const raw = await this.approvals.byIdUnscoped(gate.id);
    if (!raw || raw.state !== 'pending' || !(await this.interrupts.credentialResolves(raw))) return false;
    const host: Principal = { tenant, workspace: raw.workspaceKey || undefined, principal: 'host:credential-check', scopes: new Set(['approvals:respond']), kind: 'system' };
    try {
      await this.interrupts.resolveByRun(host, runId, nodeId, { outcome: 'authorized' });
    } catch (e) {
      // Another replica (or the connect flow's own pass) resolved it first.
      if (e instanceof DomainError && (e.status === 404 || e.status === 409)) return true;
      throw e;
    }
    return true;
  }

  /** Re-checks the credential interrupts the tenant's waiting runs are suspended on (after its connections changed). */
  async sweep(tenant: string): Promise<number> {
    const runs = (await this.ds.query(`SELECT "id" FROM "run" WHERE "tenant" = $1 AND "kind" = 'workflow' AND "status" = 'waiting-input' ORDER BY "created_at" LIMIT ${SWEEP_LIMIT}`, [tenant])) as Array<{ id: string }>;
    let resolved = 0;
    for (const { id } of runs) {
      for (const g of (await this.approvals.pendingOfRun(tenant, id)).filter((x) => x.kind === 'credential' && x.nodeId)) {
        if (await this.settle(tenant, id, g.nodeId!)) resolved++;
      }
    }
    return resolved;
  }

  /**
   * `GET /v1/runs/{runId}/interrupts/{nodeId}/connect`: starts the caller's grant for the provider and scopes the
   * step's credential interrupt names, for the run's starter only (RFC 0199 §C.3: never pre-authenticated, never
   * for another user). Unknown and foreign runs are 404 alike.
   */
  async connect(p: Principal, runId: string, nodeId: string): Promise<{ authorizationUrl: string; expiresAt: string; scopes: string[] }> {
    const gate = UUID.test(runId) ? await this.approvals.pendingOfRunNode(p, runId, nodeId) : undefined;
    if (!gate || gate.kind !== 'credential') throw new NotFoundError('No credential interrupt is waiting at this run step.');
    if (gate.requestedBy !== p.principal) throw new ForbiddenError('Only the principal who started the run authorizes the credential it waits on.', { reason: 'not-the-initiating-subject' });
    const data = (gate.data ?? {}) as { provider?: string; scopes?: string[] };
    return this.oauth.connect(p, String(data.provider), Array.isArray(data.scopes) ? data.scopes : []);
  }
}
