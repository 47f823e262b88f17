import { ArgumentsHost, Catch, Inject } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { MCP_MOUNT_PATH } from '../../platform/config/mcp-mount-settings';
import { DomainError } from '../../platform/errors/domain-error';
import { ErrorEnvelopeFilter } from '../../platform/errors/error-envelope.filter';

/** The scope the mount itself needs (what each method shows or runs then needs its own scopes). */
export const MCP_MOUNT_SCOPE = 'tools:read';
/** RFC 9728 path-inserted protected-resource metadata of the mount. */
export const MCP_PRM_PATH = `/.well-known/oauth-protected-resource${MCP_MOUNT_PATH}`;

/** The mount's absolute URL: the configured public one, else the request's own origin. */
export function mountUrl(config: HostConfig, req: FastifyRequest): string {
  return config.mcpMount.url ?? `${req.protocol}://${req.host ?? req.hostname}${MCP_MOUNT_PATH}`;
}

function prmUrl(config: HostConfig, req: FastifyRequest): string {
  const mount = new URL(mountUrl(config, req));
  return `${mount.origin}/.well-known/oauth-protected-resource${mount.pathname}`;
}

/**
 * The mount's errors before it runs (authentication, the scope) are the host's envelope, and a 401
 * names where the protected-resource metadata is (`WWW-Authenticate: Bearer resource_metadata=…`,
 * RFC 9728 §5.1), as MCP's authorization rules expect of a protected server.
 */
@Catch()
export class McpMountErrorFilter extends ErrorEnvelopeFilter {
  constructor(@Inject(HOST_CONFIG) private readonly config: HostConfig) {
    super();
  }

  override catch(exception: unknown, host: ArgumentsHost): void {
    if (exception instanceof DomainError && exception.status === 401) {
      const ctx = host.switchToHttp();
      const req = ctx.getRequest<FastifyRequest>();
      ctx.getResponse<FastifyReply>().header('WWW-Authenticate', `Bearer resource_metadata="${prmUrl(this.config, req)}", scope="${MCP_MOUNT_SCOPE}"`);
    }
    super.catch(exception, host);
  }
}
