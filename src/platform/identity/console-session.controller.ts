import { Controller, Get, Post, Query, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../errors/domain-error';
import { Public } from './decorators';
import { ConsoleSessions, cookieOf, LOGIN_COOKIE, SESSION_COOKIE, sessionCookie } from './console-session.service';

/**
 * The console's single sign-on endpoints (browser navigations, not protocol API, so kept out of the
 * OpenAPI document): `/console/auth/login` sends the browser to the identity provider,
 * `/console/auth/callback` completes the sign-in and lands on the Runs page, `/console/auth/logout`
 * ends the session. 404 while OPENWOP_CONSOLE_OIDC_CLIENT_ID is unset.
 */
@ApiExcludeController()
@Controller('console/auth')
export class ConsoleSessionController {
  constructor(private readonly sessions: ConsoleSessions) {}

  @Public()
  @Get('login')
  async login(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    if (!this.sessions.settings) return this.notFound(reply);
    const { url, state } = await this.sessions.begin();
    const secure = this.secure();
    void reply.header('set-cookie', `${LOGIN_COOKIE}=${state}; Path=/console/auth; HttpOnly; SameSite=Lax; Max-Age=600${secure}`).header('cache-control', 'no-store');
    void req;
    await reply.redirect(url, 302);
  }

  @Public()
  @Get('callback')
  async callback(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Query('code') code?: string, @Query('state') state?: string, @Query('error') error?: string): Promise<void> {
    if (!this.sessions.settings) return this.notFound(reply);
    const clearLogin = `${LOGIN_COOKIE}=; Path=/console/auth; HttpOnly; SameSite=Lax; Max-Age=0${this.secure()}`;
    try {
      if (error || !code || !state) throw new DomainError('unauthenticated', 401, error ? `The identity provider refused the sign-in (${error.slice(0, 64)}).` : 'The callback carries no code.');
      const { session, maxAgeS } = await this.sessions.complete(code, state, cookieOf(req.headers.cookie, LOGIN_COOKIE));
      void reply.header('set-cookie', [clearLogin, sessionCookie(session, maxAgeS, this.secure() !== '')]).header('cache-control', 'no-store');
      await reply.redirect('/console/#/runs', 302);
    } catch (e) {
      if (!(e instanceof DomainError)) throw e;
      // A person is looking: a plain page saying what happened, never a token or a code.
      void reply.header('set-cookie', clearLogin).header('cache-control', 'no-store');
      await reply.status(e.status).type('text/html; charset=utf-8').send(`<!doctype html><title>Sign-in failed</title><p>${escapeHtml(e.message)}</p><p><a href="/console/auth/login">Try again</a> or <a href="/console/">sign in with a credential</a>.</p>`);
    }
  }

  @Public()
  @Post('logout')
  async logout(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const endSession = await this.sessions.end(cookieOf(req.headers.cookie, SESSION_COOKIE));
    void reply.header('set-cookie', sessionCookie('', 0, this.secure() !== '')).header('cache-control', 'no-store');
    await reply.status(200).send({ signedOut: true, ...(endSession ? { endSessionUrl: endSession } : {}) });
  }

  private secure(): string {
    return this.sessions.settings?.redirectUrl.startsWith('https:') ? '; Secure' : '';
  }

  private async notFound(reply: FastifyReply): Promise<void> {
    await reply.status(404).send({ error: 'not_found', message: 'No such route.' });
  }
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
