import 'reflect-metadata';
import { Controller, Get, HttpCode, Injectable, Param, Post, RequestMethod, UseInterceptors } from '@nestjs/common';
import { HTTP_CODE_METADATA, INTERCEPTORS_METADATA, METHOD_METADATA, PATH_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { ApiCreatedResponse, ApiOperation } from '@nestjs/swagger';
import { of } from 'rxjs';
import { SCOPES_KEY, SEAM_KEY, Scopes } from '../identity/decorators';
import { SeamAlias, seamAliasesOf } from './seam-alias';

@Injectable()
class Things {
  get(id: string): string {
    return `thing ${id}`;
  }
}

class Passthrough {
  intercept(_c: unknown, next: { handle(): unknown }) {
    return next.handle() ?? of(undefined);
  }
}

@Controller()
@UseInterceptors(Passthrough)
class ThingsController {
  constructor(private readonly things: Things) {}

  @Scopes('things:read')
  @Get('/v1/things/:id')
  @ApiOperation({ operationId: 'getThing', summary: 'Read a thing' })
  @SeamAlias({ path: '/v1/host/sample/things/:id', operationId: 'seamGetThing', summary: 'Test seam: read a thing' })
  get(@Param('id') id: string): string {
    return this.things.get(id);
  }

  @Scopes('things:write')
  @Post('/v1/things')
  @HttpCode(201)
  @ApiCreatedResponse({ description: 'Created.' })
  @SeamAlias({ path: '/v1/host/sample/things', httpCode: 200, operationId: 'seamCreateThing', summary: 'Test seam: create' })
  @SeamAlias({ path: '/v1/host/sample/things/put', method: 'PUT', operationId: 'seamPutThing', summary: 'Test seam: create (PUT)' })
  create(): string {
    return 'created';
  }

  @Scopes('things:read')
  @Get('/v1/things')
  list(): string[] {
    return [];
  }
}

describe('seamAliasesOf', () => {
  const Seams = seamAliasesOf(ThingsController);
  const proto = Seams.prototype as Record<string, unknown>;
  const routes = Object.getOwnPropertyNames(proto).filter((n) => n !== 'constructor');

  it('mounts one route per alias, none for a handler without one', () => {
    expect(routes.sort()).toEqual(['create$seam0', 'create$seam1', 'get$seam0']);
  });

  it('keeps the handler: scopes, verb, parameters, class interceptors and constructor injection', () => {
    const get = proto.get$seam0 as object;
    expect(Reflect.getMetadata(PATH_METADATA, get)).toBe('/v1/host/sample/things/:id');
    expect(Reflect.getMetadata(METHOD_METADATA, get)).toBe(RequestMethod.GET);
    expect(Reflect.getMetadata(SCOPES_KEY, get)).toEqual(['things:read']);
    expect(Reflect.getMetadata(SEAM_KEY, get)).toBe(true);
    expect(Reflect.getMetadata(ROUTE_ARGS_METADATA, Seams, 'get$seam0')).toEqual(Reflect.getMetadata(ROUTE_ARGS_METADATA, ThingsController, 'get'));
    expect(Reflect.getMetadata(INTERCEPTORS_METADATA, Seams)).toEqual([Passthrough]);
    expect(Reflect.getMetadata('design:paramtypes', Seams)).toEqual([Things]);
    // The real handler is not a seam.
    expect(Reflect.getMetadata(SEAM_KEY, ThingsController.prototype.get)).toBeUndefined();
  });

  it('calls the real handler on an instance built with the same dependencies', () => {
    const seams = new Seams(new Things()) as Record<string, (...a: unknown[]) => unknown>;
    expect(seams.get$seam0('7')).toBe('thing 7');
  });

  it('changes only what the alias says: path, verb, status, operation, and documents the 404 of a seam that is off', () => {
    const post = proto.create$seam0 as object;
    const put = proto.create$seam1 as object;
    expect(Reflect.getMetadata(HTTP_CODE_METADATA, post)).toBe(200);
    expect(Reflect.getMetadata(HTTP_CODE_METADATA, put)).toBe(201);
    expect(Reflect.getMetadata(METHOD_METADATA, put)).toBe(RequestMethod.PUT);
    expect(Reflect.getMetadata('swagger/apiOperation', post)).toMatchObject({ operationId: 'seamCreateThing', summary: 'Test seam: create' });
    expect(Object.keys(Reflect.getMetadata('swagger/apiResponse', post) as object)).toEqual(['200', '404']);
    expect(Object.keys(Reflect.getMetadata('swagger/apiResponse', ThingsController.prototype.create) as object)).toEqual(['201']);
    expect(Reflect.getMetadata('swagger/apiUseTags', post)).toEqual(['test-seams']);
  });
});
