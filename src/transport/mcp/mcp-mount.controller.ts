import { Body, Controller, Get, Header, HttpCode, Inject, Logger, Post, Req, Res, UseFilters } from '@nestjs/common';
import { ApiBody, ApiExcludeEndpoint, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { CurrentPrincipal, Public, Scopes } from '../../platform/identity/decorators';
import type { Principal } from '../../platform/identity/principal';
import { ApiErrors } from '../../platform/openapi/api-errors.decorator';
import { SeamAlias } from '../../platform/seams/seam-alias';
import { MCP_MOUNT_PATH, MCP_MOUNT_V2_PATH } from '../../platform/config/mcp-mount-settings';
import { MCP_MOUNT_SCOPE, MCP_PRM_PATH, MCP_V2_PRM_PATH, McpMountErrorFilter, mountUrl } from './mcp-mount.errors';
import { McpMountService } from './mcp-mount.service';

/** The response stream of one request (SSE): its notifications, then its answer, then the end. */
class SseStream {
  private ids = 0;

  constructor(private readonly reply: FastifyReply) {
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive' });
    // Sent now, not with the first message: a stream opened at run start may carry nothing for a while.
    reply.raw.flushHeaders();
  }

  send(message: unknown): void {
    if (!this.reply.raw.writableEnded) this.reply.raw.write(`id: ${++this.ids}\nevent: message\ndata: ${JSON.stringify(message)}\n\n`);
  }

  end(message: unknown): void {
    if (message !== undefined) this.send(message);
    this.reply.raw.end();
  }
}

/** Whether the client lists `text/event-stream` first among what it accepts (its preference, when no q-values say otherwise). */
function prefersStream(accept: string): boolean {
  const ranked = accept
    .split(',')
    .map((part, i) => {
      const [type, ...params] = part.split(';').map((x) => x.trim().toLowerCase());
      const q = params.find((x) => x.startsWith('q='));
      return { type, q: q ? Number(q.slice(2)) || 0 : 1, i };
    })
    .filter((m) => m.type && m.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i);
  return ranked[0]?.type === 'text/event-stream';
}

/**
 * The host as an MCP server over streamable HTTP: one JSON-RPC request per POST, answered with a
 * JSON body, or on the request's own stream when it asked for progress (nothing is kept between
 * requests: no session, no standalone stream, so GET is 405). The
 * caller is authenticated by the host's API keys or JWTs like every route.
 */
@ApiTags('mcp')
@Controller()
@UseFilters(McpMountErrorFilter)
export class McpMountController {
  private readonly logger = new Logger('mcp-mount');

  constructor(
    private readonly mount: McpMountService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  @Scopes(MCP_MOUNT_SCOPE)
  @Post(MCP_MOUNT_PATH)
  @HttpCode(200)
  @SeamAlias({ path: '/v1/host/sample/mcp', httpCode: 200, operationId: 'seamMcpMount', summary: '(test seam) the MCP server mount at the path the official scenarios hard-code' })
  @ApiOperation({
    operationId: 'mcpMount',
    summary: 'The host as an MCP server (streamable HTTP, MCP 2026-07-28 and 2025-06-18): a JSON-RPC request in, its JSON-RPC answer out',
    description: 'Tools are the caller\'s governed catalog and the workflows exposed with core.openwop.mcp.expose-tool; see docs/mcp.md. JSON-RPC errors keep their HTTP status (400 for -32020/-32021/-32022, 404 for an unknown method at 2026-07-28); a notification is 202.',
  })
  @ApiBody({ schema: { type: 'object', required: ['jsonrpc', 'method'], properties: { jsonrpc: { type: 'string', enum: ['2.0'] }, id: { oneOf: [{ type: 'string' }, { type: 'integer' }] }, method: { type: 'string' }, params: { type: 'object', additionalProperties: true } } } })
  @ApiOkResponse({ schema: { type: 'object', required: ['jsonrpc'], properties: { jsonrpc: { type: 'string' }, id: {}, result: { type: 'object', additionalProperties: true }, error: { type: 'object', additionalProperties: true } } } })
  @ApiErrors(400, 401, 403, 404)
  post(@CurrentPrincipal() p: Principal, @Body() body: unknown, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<unknown> {
    return this.serve(p, body, req, reply, 'v1');
  }

  /** The current-only mount the v2 discovery record names: revision 2026-07-28 alone, tenant-bound ids. Not a v1 operation. */
  @Scopes(MCP_MOUNT_SCOPE)
  @Post(MCP_MOUNT_V2_PATH)
  @HttpCode(200)
  @ApiExcludeEndpoint()
  postV2(@CurrentPrincipal() p: Principal, @Body() body: unknown, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<unknown> {
    return this.serve(p, body, req, reply, 'v2');
  }

  private async serve(p: Principal, body: unknown, req: FastifyRequest, reply: FastifyReply, mount: 'v1' | 'v2'): Promise<unknown> {
    // A client that accepts a stream gets the progress of a long call on it (text/event-stream, opened
    // at the first notification); otherwise, and when nothing was sent before the answer, a JSON body.
    const accepts = String(req.headers.accept ?? '');
    let stream: SseStream | undefined;
    const notify = /text\/event-stream/i.test(accepts) ? (message: Record<string, unknown>) => (stream ??= new SseStream(reply)).send(message) : undefined;
    // The v2 mount: a client leaving before the whole answer is sent abandons the request (and the
    // run it owns, RFC 0198 §G.12); one that prefers a stream gets it as soon as the run exists.
    const left = new AbortController();
    if (mount === 'v2') reply.raw.on('close', () => !reply.raw.writableFinished && left.abort());
    const io = mount === 'v2' ? { signal: left.signal, ...(prefersStream(accepts) ? { started: () => void (stream ??= new SseStream(reply)) } : {}) } : {};
    let answer: Awaited<ReturnType<McpMountService['handle']>>;
    try {
      answer = await this.mount.handle(p, body, req.headers as Record<string, string | string[] | undefined>, notify, mount, io);
    } catch (e) {
      // Once the stream is open the status is sent: the failure is the request's JSON-RPC error on it.
      if (!stream) throw e;
      this.logger.error({ msg: 'MCP request failed after its stream opened', err: e });
      const id = body && typeof body === 'object' && !Array.isArray(body) ? ((body as { id?: unknown }).id ?? null) : null;
      return stream.end({ jsonrpc: '2.0', id, error: { code: -32603, message: 'Internal error' } });
    }
    if (stream) return stream.end(left.signal.aborted ? undefined : answer.body);
    if (left.signal.aborted) {
      // Nobody is there to read an answer.
      reply.hijack();
      return reply.raw.destroy();
    }
    reply.status(answer.status);
    for (const [name, value] of Object.entries(answer.headers ?? {})) reply.header(name, value);
    if (answer.body === undefined) return reply.send();
    reply.type('application/json; charset=utf-8');
    return answer.body;
  }

  @Public()
  @Get(MCP_PRM_PATH)
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation({ operationId: 'mcpProtectedResourceMetadata', summary: 'OAuth 2.0 protected-resource metadata of the MCP mount (RFC 9728)' })
  @ApiOkResponse({ schema: { type: 'object', required: ['resource'], properties: { resource: { type: 'string' }, authorization_servers: { type: 'array', items: { type: 'string' } }, bearer_methods_supported: { type: 'array', items: { type: 'string' } }, scopes_supported: { type: 'array', items: { type: 'string' } }, resource_name: { type: 'string' } } } })
  // Public reads are rate-limited per client address.
  @ApiErrors(429)
  metadata(@Req() req: FastifyRequest): Record<string, unknown> {
    return this.prm(req, MCP_MOUNT_PATH);
  }

  @Public()
  @Get(MCP_V2_PRM_PATH)
  @Header('Cache-Control', 'public, max-age=300')
  @ApiExcludeEndpoint()
  metadataV2(@Req() req: FastifyRequest): Record<string, unknown> {
    return this.prm(req, MCP_MOUNT_V2_PATH);
  }

  private prm(req: FastifyRequest, path: string): Record<string, unknown> {
    const issuer = this.config.jwt.issuer;
    return {
      resource: mountUrl(this.config, req, path),
      ...(issuer ? { authorization_servers: [issuer] } : {}),
      bearer_methods_supported: ['header'],
      scopes_supported: [MCP_MOUNT_SCOPE, 'runs:create', 'approvals:respond'],
      resource_name: 'OpenWOP host MCP server',
    };
  }

  @Public()
  @Get(MCP_MOUNT_PATH)
  @ApiExcludeEndpoint()
  streamRefused(@Res() reply: FastifyReply): void {
    // No standalone stream: every request is answered on its own POST (2026-07-28 has none; the legacy profile allows a server to offer none).
    void reply.status(405).header('Allow', 'POST').type('application/json; charset=utf-8').send({ error: 'method_not_allowed', message: 'The MCP mount answers POSTed JSON-RPC requests; it keeps no stream or session.' });
  }
}
