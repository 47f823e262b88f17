import { createHash } from 'node:crypto';
import type { RequestStateCodec, ServerContext } from '@modelcontextprotocol/server';
import { canonicalJson } from '../../platform/artifacts/artifact-registry.service';
import type { Principal } from '../../platform/identity/principal';

/** What a minted `requestState` carries (readable by the client: nothing secret). */
export interface RequestStatePayload {
  /** The run the tool call started. */
  runId: string;
  /** The open interrupt the elicitation answers (its `interruptId`, the `inputRequests` key). */
  interruptId: string;
  /** Asked in URL mode: the answer is given on the host's page, so no retry resolves anything (RFC 0199 §D.2). */
  url?: true;
}

/** What the state is bound to: the caller and the request it answers (never embedded raw). */
export interface RequestStateBinding {
  principal: Principal;
  tool: string;
  arguments: Record<string, unknown>;
}

export class RequestStateRefused extends Error {
  constructor(readonly reason: 'malformed' | 'mac' | 'expired' | 'bind') {
    super(`requestState refused: ${reason}`);
  }
}

/** The digest of the originating request a state is bound to: the tool and its arguments, RFC 8785 text. */
export function requestDigest(tool: string, args: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson({ tool, arguments: args })).digest('hex');
}

function bindingText(b: RequestStateBinding): string {
  const p = b.principal;
  return [p.tenant, p.workspace ?? '', p.principal, requestDigest(b.tool, b.arguments)].join('\n');
}

/**
 * The MRTR `requestState` of the host's MCP mount (RFC 0153 §C.2): HMAC-SHA256 over the payload and
 * an expiry (the MCP SDK's codec), bound to the authenticated principal (tenant, workspace, subject)
 * and the digest of the originating request, carrying the run id and the interrupt it answers. A
 * tampered, expired or foreign state is refused; single use comes from the interrupt itself, which a
 * resolution closes (and a repeated vote by the same principal is refused by the gate).
 */
export class McpRequestStateCodec {
  private made?: RequestStateCodec<RequestStatePayload>;

  constructor(
    private readonly key: Uint8Array,
    private readonly ttlSeconds: number,
  ) {}

  /** Made on first use: the MCP server SDK is loaded only by a host whose mount answers an MRTR call. */
  private get codec(): RequestStateCodec<RequestStatePayload> {
    if (!this.made) {
      const { createRequestStateCodec } = require('@modelcontextprotocol/server') as typeof import('@modelcontextprotocol/server');
      // The codec's binding callback is typed for the SDK's own server context; this mount hands it its binding.
      this.made = createRequestStateCodec<RequestStatePayload>({ key: this.key, ttlSeconds: this.ttlSeconds, bind: (ctx) => bindingText(ctx as unknown as RequestStateBinding) });
    }
    return this.made;
  }

  mint(payload: RequestStatePayload, binding: RequestStateBinding): Promise<string> {
    return this.codec.mint(payload, binding as unknown as ServerContext);
  }

  async verify(state: string, binding: RequestStateBinding): Promise<RequestStatePayload> {
    if (typeof state !== 'string' || state.length > 4096) throw new RequestStateRefused('malformed');
    let payload: unknown;
    try {
      payload = await this.codec.verify(state, binding as unknown as ServerContext);
    } catch (e) {
      const reason = (e as Error)?.message;
      throw new RequestStateRefused(reason === 'mac' || reason === 'expired' || reason === 'bind' ? reason : 'malformed');
    }
    const p = payload as Partial<RequestStatePayload> | null;
    if (!p || typeof p.runId !== 'string' || typeof p.interruptId !== 'string') throw new RequestStateRefused('malformed');
    return { runId: p.runId, interruptId: p.interruptId, ...(p.url === true ? { url: true as const } : {}) };
  }
}
