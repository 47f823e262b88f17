import { randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Injectable } from '@nestjs/common';
import type { Principal } from '../../../platform/identity/principal';
import { OAuthService } from './oauth.service';
import { unsupported } from './oauth-provider-client';

/** The body of `POST /v1/host/sample/oauth/authorize-code-roundtrip` (conformance fixtures/oauth-providers/synthetic.json). */
export interface RoundtripInput {
  provider: string;
  tokenUrl: string;
  scopes: string[];
  authorizationCode: string;
  state: string;
  redirectUri: string;
  codeVerifier: string;
  accessTokenCanary: string;
  refreshTokenCanary: string;
}

/**
 * The `oauth-authorization-code-roundtrip` seam (RFC 0047 §C). The synthetic provider's endpoints
 * (`*.openwop.test`) resolve nowhere, so its token endpoint is stood in for by a loopback listener that accepts only
 * the fixture's code with the fixture's redirect URI and PKCE verifier from the configured client, and answers the
 * canary tokens. Everything else is the host's own path: the authorization in flight keyed by the `state` hash with
 * the verifier sealed, the single-use state lookup, the code exchange, the sealed grant and `connector.authorized`.
 * The grant is deleted afterwards. Needs an OAuth client for the provider (`connections.oauth.clients.<provider>`).
 */
@Injectable()
export class OAuthRoundtripSeam {
  constructor(private readonly oauth: OAuthService) {}

  async run(p: Principal, input: RoundtripInput): Promise<{ provider: string; credentialRef: string; scopes: string[]; events: Array<{ type: string; payload: Record<string, unknown> }> }> {
    const client = this.oauth.client.client(input.provider);
    if (!client) throw unsupported(input.provider);
    const server = createServer((req, res) => void this.token(req, res, input, client.clientId));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const connectionId = randomUUID();
    try {
      await this.oauth.pending({ tenant: p.tenant, principal: p.principal, connectionId, state: input.state, verifier: input.codeVerifier, scopes: input.scopes, redirectUri: input.redirectUri });
      const { a, verifier } = await this.oauth.take(input.state);
      const tokenEndpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
      const { event, ...grant } = await this.oauth.complete({ tenant: a.tenant, principal: a.principal, connectionId: a.connectionId, providerId: input.provider, tokenEndpoint, redirectUri: a.redirectUri, scopes: a.scopes }, input.authorizationCode, verifier);
      return { provider: input.provider, credentialRef: grant.credentialRef, scopes: grant.scopes, events: [event] };
    } finally {
      await this.oauth.forgetGrant(p.tenant, connectionId, p.principal);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  private async token(req: IncomingMessage, res: ServerResponse, input: RoundtripInput, clientId: string): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += String(chunk);
    const form = new URLSearchParams(raw);
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const caller = basic ? decodeURIComponent(Buffer.from(basic, 'base64').toString('utf8').split(':')[0]) : form.get('client_id');
    const ok = req.method === 'POST' && form.get('grant_type') === 'authorization_code' && form.get('code') === input.authorizationCode && form.get('redirect_uri') === input.redirectUri && form.get('code_verifier') === input.codeVerifier && caller === clientId;
    res.setHeader('content-type', 'application/json');
    if (!ok) {
      res.writeHead(400).end(JSON.stringify({ error: 'invalid_grant' }));
      return;
    }
    res.writeHead(200).end(JSON.stringify({ access_token: input.accessTokenCanary, refresh_token: input.refreshTokenCanary, token_type: 'Bearer', expires_in: 3600, scope: input.scopes.join(' ') }));
  }
}
