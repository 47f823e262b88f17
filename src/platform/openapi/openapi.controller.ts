import { Controller, Get, Header, Req } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { requestMajor } from '../http/protocol-version';
import { Public } from '../identity/decorators';
import { OpenApiHolder } from './openapi-holder';

@ApiExcludeController()
@Controller()
export class OpenApiController {
  constructor(private readonly holder: OpenApiHolder) {}

  /** `/v1/openapi.json`: the v1 document; `/openapi.json` under major 2 (routed here): the v2 one, from the same routes. */
  @Public()
  @Get('/v1/openapi.json')
  @Header('Content-Type', 'application/json; charset=utf-8')
  @Header('Cache-Control', 'public, max-age=300')
  document(@Req() req: FastifyRequest): string {
    return requestMajor(req) >= 2 ? this.holder.v2Serialized : this.holder.serialized;
  }
}
