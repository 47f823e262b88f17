import { ArgumentsHost, Catch, Inject } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { MCP_MOUNT_PATH, MCP_MOUNT_V2_PATH } from '../../platform/config/mcp-mount-settings';
import { DomainError } from '../../platform/errors/domain-error';
import { ErrorEnvelopeFilter } from '../../platform/errors/error-envelope.filter';

/** The scope the mount itself needs (what each method shows or runs then needs its own scopes). */
export const MCP_MOUNT_SCOPE = 'tools:read';
/** RFC 9728 path-inserted protected-resource metadata of the mount. */
export const MCP_PRM_PATH = `/.well-known/oauth-protected-resource${MCP_MOUNT_PATH}`;
export const MCP_V2_PRM_PATH = `/.well-known/oauth-protected-resource${MCP_MOUNT_V2_PATH}`;

/** The host's public origin: the configured public URL's, else the request's own. */
export function publicOrigin(config: HostConfig, req: FastifyRequest): string {
  return config.mcpMount.url ? new URL(config.mcpMount.url).origin : `${req.protocol}://${req.host ?? req.hostname}`;
}

/** A mount's absolute URL (the v1 one unless `path` names the v2 one), under the configured public base URL when set. */
export function mountUrl(config: HostConfig, req: FastifyRequest, path: string = MCP_MOUNT_PATH): string {
  if (!config.mcpMount.url) return `${publicOrigin(config, req)}${path}`;
  return config.mcpMount.url.slice(0, config.mcpMount.url.length - MCP_MOUNT_PATH.length) + path;
}

/** The mount a request came to: the v2 one when its path is the v2 mount's, else the v1 one. */
export function mountPathOf(req: FastifyRequest): string {
  return (req.url ?? '').split('?')[0].endsWith(MCP_MOUNT_V2_PATH) && !(req.url ?? '').startsWith('/v1/') ? MCP_MOUNT_V2_PATH : MCP_MOUNT_PATH;
}

function prmUrl(config: HostConfig, req: FastifyRequest): string {
  const mount = new URL(mountUrl(config, req, mountPathOf(req)));
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
