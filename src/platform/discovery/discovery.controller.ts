import { Controller, Get, Headers, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { requestMajor } from '../http/protocol-version';
import { PrincipalRequest, PublicWithOptionalPrincipal } from '../identity/decorators';
import { DiscoveryDocumentService } from './discovery.service';

@ApiExcludeController()
@Controller()
export class DiscoveryController {
  constructor(private readonly discovery: DiscoveryDocumentService) {}

  /**
   * `/.well-known/openwop`: public, cacheable, with a strong ETag and 304 on If-None-Match. Called
   * with a valid credential it answers the caller's auth-scoped view (same-endpoint mode), which
   * only shared caches must not keep.
   */
  @PublicWithOptionalPrincipal()
  @Get('/.well-known/openwop')
  async document(@Headers('if-none-match') ifNoneMatch: string | undefined, @Req() req: PrincipalRequest, @Res() reply: FastifyReply): Promise<void> {
    // One resource, a representation per protocol major (the request's OpenWOP-Version), each with its own ETag.
    const major = requestMajor(req);
    const { body, etag } = major === 2 ? await this.discovery.v2Document(req.principal, `${req.protocol}://${req.host ?? req.hostname}`) : await this.discovery.document(req.principal);
    reply.header('Cache-Control', req.principal ? 'private, max-age=300' : 'public, max-age=300');
    reply.header('ETag', etag);
    // v2 removed Capabilities-Etag (ETag / If-None-Match only).
    if (major === 1) reply.header('Capabilities-Etag', etag);
    reply.header('Vary', 'Authorization');
    const tags = (ifNoneMatch ?? '').split(',').map((t) => t.trim());
    if (tags.includes(etag) || tags.includes('*')) {
      await reply.status(304).send();
      return;
    }
    await reply.status(200).type('application/json; charset=utf-8').send(JSON.stringify(body));
  }
}
