import { applyDecorators, HttpCode, RequestMethod, Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { TestSeam } from '../identity/decorators';
import { errorResponse } from '../openapi/api-errors.decorator';

/** One `/v1/host/sample/...` path that serves a real handler (the official conformance suite calls it). */
export interface SeamAliasSpec {
  path: string;
  operationId: string;
  summary: string;
  /** The seam's verb when it is not the handler's (a POST form of a PATCH). */
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The seam's success status when it is not the handler's. */
  httpCode?: number;
  /** Filed under the `test-seams` tag beside the controller's own (default true). */
  seamTag?: boolean;
}

const SEAM_ALIASES = 'openwop:seam-aliases';
const TARGET = Symbol('seam-alias-target');
const OPERATION_KEY = 'swagger/apiOperation';
const TAGS_KEY = 'swagger/apiUseTags';
const RESPONSES_KEY = 'swagger/apiResponse';

/** The seam's documented answers: the handler's, its success under the seam's status, and 404 (a seam that is off). */
function seamResponses(responses: Record<string, unknown> | undefined, httpCode: number | undefined): Record<string, unknown> | undefined {
  if (!responses) return responses;
  const out: Record<string, unknown> = {};
  for (const [status, r] of Object.entries(responses)) out[httpCode !== undefined && /^2/.test(status) ? String(httpCode) : status] = r;
  out['404'] ??= errorResponse(404);
  return out;
}

/**
 * Also serves this handler at a conformance seam path: the same guards, scopes, pipes, parameters,
 * interceptors and OpenAPI description, plus the seam's own operation id, and the seam rules
 * (`@TestSeam`: 404 unless OPENWOP_TEST_SEAMS=true, always authenticated, left out of the
 * production OpenAPI document). The routes are mounted by `seamAliasesOf(Controller)`.
 */
export function SeamAlias(spec: SeamAliasSpec): MethodDecorator {
  return (_target, _key, descriptor) => {
    const list = (Reflect.getOwnMetadata(SEAM_ALIASES, descriptor.value as object) as SeamAliasSpec[] | undefined) ?? [];
    // Decorators apply bottom-up: prepend, so the aliases keep the order they are written in.
    Reflect.defineMetadata(SEAM_ALIASES, [spec, ...list], descriptor.value as object);
  };
}

function copyOwnMetadata(from: object, to: object, fromKey?: string | symbol, toKey?: string | symbol): void {
  const keys = fromKey === undefined ? Reflect.getOwnMetadataKeys(from) : Reflect.getOwnMetadataKeys(from, fromKey);
  for (const k of keys) {
    if (k === SEAM_ALIASES) continue;
    const v = fromKey === undefined ? Reflect.getOwnMetadata(k, from) : Reflect.getOwnMetadata(k, from, fromKey);
    if (toKey === undefined) Reflect.defineMetadata(k, v, to);
    else Reflect.defineMetadata(k, v, to, toKey);
  }
}

/**
 * The seam controller of `controller`: one route per `@SeamAlias` of its handlers, each delegating
 * to the handler on an instance built with the same dependencies. List it beside the controller in
 * the module's `controllers`. Class-level metadata (path, guards, interceptors, tags, constructor
 * injection) is the controller's own, so a seam answers exactly like the route it aliases.
 */
export function seamAliasesOf<T>(controller: Type<T>): Type<unknown> {
  class SeamAliases {
    constructor(...deps: unknown[]) {
      Object.defineProperty(this, TARGET, { value: new controller(...deps) });
    }
  }
  Object.defineProperty(SeamAliases, 'name', { value: `${controller.name}SeamAliases` });
  copyOwnMetadata(controller, SeamAliases);
  const proto = controller.prototype as Record<string, unknown>;
  for (const name of Object.getOwnPropertyNames(proto)) {
    const handler = Object.getOwnPropertyDescriptor(proto, name)?.value as unknown;
    if (typeof handler !== 'function' || name === 'constructor') continue;
    const aliases = Reflect.getOwnMetadata(SEAM_ALIASES, handler) as SeamAliasSpec[] | undefined;
    aliases?.forEach((spec, i) => {
      const key = `${name}$seam${i}`;
      const fn = function (this: Record<symbol, unknown>, ...args: unknown[]): unknown {
        return (handler as (...a: unknown[]) => unknown).apply(this[TARGET], args);
      };
      Object.defineProperty(fn, 'name', { value: key });
      // The handler's own route, OpenAPI and guard metadata, its parameter types and decorators...
      copyOwnMetadata(handler, fn);
      copyOwnMetadata(proto, SeamAliases.prototype, name, key);
      copyOwnMetadata(controller, SeamAliases, name, key);
      // ...then what the seam changes: path, verb, status, operation and the seam rules.
      Reflect.defineMetadata(PATH_METADATA, spec.path, fn);
      if (spec.method) Reflect.defineMetadata(METHOD_METADATA, RequestMethod[spec.method], fn);
      Reflect.defineMetadata(RESPONSES_KEY, seamResponses(Reflect.getOwnMetadata(RESPONSES_KEY, fn) as Record<string, unknown> | undefined, spec.httpCode), fn);
      Reflect.deleteMetadata(OPERATION_KEY, fn);
      if (spec.seamTag !== false) Reflect.deleteMetadata(TAGS_KEY, fn);
      const descriptor: PropertyDescriptor = { value: fn, writable: true, configurable: true, enumerable: false };
      Object.defineProperty(SeamAliases.prototype, key, descriptor);
      applyDecorators(
        TestSeam(),
        ApiOperation({ operationId: spec.operationId, summary: spec.summary }),
        ...(spec.seamTag !== false ? [ApiTags('test-seams')] : []),
        ...(spec.httpCode !== undefined ? [HttpCode(spec.httpCode)] : []),
      )(SeamAliases.prototype, key, descriptor);
    });
  }
  return SeamAliases;
}
