import { Body, Controller, Get, Post, Query, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DomainError } from '../../errors/domain-error';
import { ConsoleSessions, sessionCookie } from '../console-session.service';
import { Public } from '../decorators';
import { SamlSignIn } from './saml-sign-in.service';

/**
 * The console's SAML sign-in (browser navigations, kept out of the OpenAPI document):
 * `/console/auth/saml/login?idp=<id>` sends the browser to the provider with an AuthnRequest,
 * `/console/auth/saml/acs` receives the provider's POSTed response (RelayState names the provider),
 * opens a console session and lands on the Runs page; `/console/auth/saml/metadata` is the host's SP
 * metadata for the provider's administrator. 404 while OPENWOP_SAML_IDPS_FILE is unset.
 */
@ApiExcludeController()
@Controller('console/auth/saml')
export class SamlController {
  constructor(
    private readonly saml: SamlSignIn,
    private readonly sessions: ConsoleSessions,
  ) {}

  @Public()
  @Get('login')
  async login(@Res() reply: FastifyReply, @Query('idp') idp?: string): Promise<void> {
    if (!this.saml.settings) return this.page(reply, 404, 'No such route.');
    const provider = this.saml.settings.idps.find((p) => p.id === idp);
    if (!provider) return this.page(reply, 404, 'No such identity provider.');
    void reply.header('cache-control', 'no-store');
    await reply.redirect(await this.saml.begin(provider), 302);
  }

  @Public()
  @Post('acs')
  async acs(@Res() reply: FastifyReply, @Body() body: unknown): Promise<void> {
    const s = this.saml.settings;
    if (!s) return this.page(reply, 404, 'No such route.');
    const form = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
    try {
      const provider = typeof form.RelayState === 'string' ? s.idps.find((p) => p.id === form.RelayState) : undefined;
      if (!provider || typeof form.SAMLResponse !== 'string') throw new DomainError('unauthenticated', 401, 'The sign-in response names no identity provider this host trusts.');
      const outcome = await this.saml.complete(provider, form.SAMLResponse);
      if (!outcome.authenticated) {
        const msg = outcome.reason === 'deprovisioned' ? 'Your account has been deactivated.' : outcome.reason === 'no-role' ? 'Your groups grant no role on this host.' : 'The identity provider\'s sign-in could not be accepted.';
        throw new DomainError(outcome.reason === 'no-role' || outcome.reason === 'deprovisioned' ? 'forbidden' : 'unauthenticated', outcome.reason === 'no-role' || outcome.reason === 'deprovisioned' ? 403 : 401, msg);
      }
      const session = await this.sessions.open(outcome.principal, `saml:${provider.id}`, s.sessionTtlS);
      void reply.header('set-cookie', sessionCookie(session, s.sessionTtlS, s.acsUrl.startsWith('https:'))).header('cache-control', 'no-store');
      await reply.redirect('/console/#/runs', 302);
    } catch (e) {
      if (!(e instanceof DomainError)) throw e;
      return this.page(reply, e.status, e.message);
    }
  }

  @Public()
  @Get('metadata')
  async metadata(@Res() reply: FastifyReply): Promise<void> {
    if (!this.saml.settings) return this.page(reply, 404, 'No such route.');
    await reply.type('application/samlmetadata+xml').send(this.saml.metadata());
  }

  private async page(reply: FastifyReply, status: number, message: string): Promise<void> {
    // A person is looking: a plain page saying what happened, never a token or an assertion.
    await reply.status(status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(`<!doctype html><title>Sign-in failed</title><p>${escapeHtml(message)}</p><p><a href="/console/">Back to the console</a></p>`);
  }
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
