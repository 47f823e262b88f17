import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Public } from '../identity/decorators';

/** Holds the document built once at start from the mounted routes. */
export class OpenApiHolder {
  document: Record<string, unknown> = {};
  serialized = '{}';

  set(doc: Record<string, unknown>): void {
    this.document = doc;
    this.serialized = JSON.stringify(doc);
  }
}

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
