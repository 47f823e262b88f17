import { Inject, Logger, Module, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { HOST_CONFIG, HostConfig } from '../platform/config/host-config';
import { CONSOLE_CSP, CONSOLE_DIST, consoleBuilt, NOT_BUILT_PAGE } from './console-assets';

function secure(reply: FastifyReply): void {
  void reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY');
}

/**
 * Serves the operator console (console/, built into console/dist) at /console. The console is a
 * client of the public /v1 API like any other: it has no routes of its own beyond its static files
 * and a small settings file, appears neither in the OpenAPI document nor in discovery, and every
 * action it offers is authorized by the API with the signed-in credential.
 */
@Module({})
export class ConsoleModule implements OnModuleInit {
  private readonly logger = new Logger('console');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  onModuleInit(): void {
    if (!this.config.consoleEnabled) return;
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    const jwt = Boolean(this.config.jwt.secret || this.config.jwt.jwksUrl);
    const built = consoleBuilt();
    // A person opening the host's address expects the console, not a JSON 404.
    for (const root of ['/', '/console']) {
      fastify.get(root, (_req, reply) => {
        void reply.redirect('/console/', 302);
      });
    }
    // What the sign-in form needs to know before any credential exists; nothing secret.
    fastify.get('/console/settings.json', (_req, reply) => {
      secure(reply);
      // `sso` only while console single sign-on is configured (the document is unchanged otherwise).
      void reply.header('cache-control', 'no-store').send(this.config.identity?.console ? { jwt, sso: true } : { jwt });
    });
    if (!built) {
      this.logger.warn('the operator console is not built (npm run console:build); /console explains how');
      fastify.get('/console/', (_req, reply) => {
        secure(reply);
        void reply.code(503).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(NOT_BUILT_PAGE);
      });
      return;
    }
    void fastify.register(fastifyStatic, {
      root: CONSOLE_DIST,
      prefix: '/console/',
      // Swagger UI registered the reply decorators already.
      decorateReply: false,
      index: ['index.html'],
      wildcard: true,
      dotfiles: 'ignore',
      setHeaders(reply, file) {
        secure(reply);
        // Hashed bundle names never change content; the page itself must always be revalidated.
        void reply.header('cache-control', /[\\/]assets[\\/]/.test(file) ? 'public, max-age=31536000, immutable' : 'no-cache');
      },
    });
  }
}
