import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Public } from '../identity/decorators';
import { OpenApiHolder } from './openapi-holder';

@ApiExcludeController()
@Controller()
export class OpenApiController {
  constructor(private readonly holder: OpenApiHolder) {}

  @Public()
  @Get('/v1/openapi.json')
  @Header('Content-Type', 'application/json; charset=utf-8')
  @Header('Cache-Control', 'public, max-age=300')
  document(): string {
    return this.holder.serialized;
  }
}
