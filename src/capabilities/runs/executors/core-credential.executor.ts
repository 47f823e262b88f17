import { Injectable } from '@nestjs/common';
import { InterruptRequest, NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';
import { CREDENTIAL_RESUME_SCHEMA, CredentialInterrupts } from '../interrupts/credential-interrupts.service';

const PROVIDER = /^[A-Za-z0-9_.-]{1,128}$/;
const MAX_SCOPES = 50;

/**
 * `core.credential {provider, scopes?, title?}` (RFC 0199 §C): the step that needs the run's starter to hold an
 * OAuth credential for `provider` with `scopes` (its own grant, or the tenant's shared one, on a connection of the
 * provider). When none resolves, the run suspends in `waiting-input` on a `credential` interrupt whose data is
 * `{provider, scopes, reason: missing | expired | insufficient_scope, connectUrl}`; the starter opens `connectUrl`
 * (signed in), authorizes at the provider, and the host resolves the interrupt itself once the grant is stored.
 * `{outcome: "declined"}` fails the step with `connector_auth_declined`. Outputs `{provider, credentialRef}`.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.credential', replayPolicy: 'idempotent' })
export class CoreCredentialExecutor implements NodeExecutorProvider {
  constructor(private readonly credentials: CredentialInterrupts) {}

  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    if (typeof config.provider !== 'string' || !PROVIDER.test(config.provider)) problems.push(`core.credential needs config.provider, a provider id matching ${PROVIDER}`);
    const s = config.scopes;
    if (s !== undefined && (!Array.isArray(s) || s.length > MAX_SCOPES || s.some((x) => typeof x !== 'string' || !x || x.length > 256))) problems.push(`core.credential config.scopes must be up to ${MAX_SCOPES} non-empty strings`);
    if (config.title !== undefined && (typeof config.title !== 'string' || config.title.length > 500)) problems.push('core.credential config.title must be a string of at most 500 characters');
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const provider = String(ctx.config.provider);
    const scopes = [...new Set(Array.isArray(ctx.config.scopes) ? (ctx.config.scopes as string[]) : [])];
    const starter = { tenant: ctx.principal.tenant, principal: ctx.principal.principal };
    const first = await this.credentials.status(starter, provider, scopes);
    if (first.status !== 'ok') {
      const title = typeof ctx.config.title === 'string' && ctx.config.title ? ctx.config.title : `Authorize ${provider}${scopes.length ? ` (${scopes.join(' ')})` : ''}`;
      // The host's own kind (not offered to plugins through the SDK): the engine parks it in waiting-input.
      const request = { kind: 'credential', title, resumeSchema: CREDENTIAL_RESUME_SCHEMA, data: { provider, scopes, reason: first.status, connectUrl: this.credentials.connectUrl(ctx.runId, ctx.nodeId) } };
      const answer = (await ctx.interrupt(request as unknown as InterruptRequest)) as { outcome?: string };
      if (answer?.outcome !== 'authorized') throw new NodeExecutionError('connector_auth_declined', `The credential for provider "${provider}" was declined.`);
    }
    const now = first.status === 'ok' ? first : await this.credentials.status(starter, provider, scopes);
    if (now.status !== 'ok') throw new NodeExecutionError('connector_auth_expired', `The credential for provider "${provider}" no longer resolves (${now.status}).`);
    return { outputs: { provider, credentialRef: now.credentialRef } };
  }
}
