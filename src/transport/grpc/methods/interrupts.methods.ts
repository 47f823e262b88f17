import { Injectable } from '@nestjs/common';
import { InterruptsController, InterruptsService, ResolveInterruptBody } from '../../../capabilities/runs';
import { EngineCall, EngineMethod, UnaryEngineMethod } from '../engine-method';
import type { JsonObject } from '../json-struct';

/**
 * Interrupt resolution over gRPC: the REST routes of InterruptsController through
 * InterruptsService. By run, a bearer with `approvals:respond`; by token, the signed token is the
 * authority, and the methods are public as their REST twins are (rate-limited per address).
 */

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

/** ResolveInterruptByRun: `POST /v1/runs/{runId}/interrupts/{nodeId}` with `{resumeValue}`. */
@Injectable()
@EngineMethod()
export class ResolveInterruptByRunMethod implements UnaryEngineMethod {
  readonly name = 'ResolveInterruptByRun';
  readonly kind = 'unary';
  readonly rest = { controller: InterruptsController, handler: 'resolve' };

  constructor(private readonly interrupts: InterruptsService) {}

  async handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    const { runId, nodeId, ...rest } = request;
    const body = await call.validate(ResolveInterruptBody, rest, 'body');
    return this.interrupts.resolveByRun(call.requirePrincipal(), text(runId), text(nodeId), body.resumeValue);
  }
}

/** ResolveInterruptByToken: `POST /v1/interrupts/{token}`; the token is checked before the body, as REST does. */
@Injectable()
@EngineMethod()
export class ResolveInterruptByTokenMethod implements UnaryEngineMethod {
  readonly name = 'ResolveInterruptByToken';
  readonly kind = 'unary';
  readonly rest = { controller: InterruptsController, handler: 'resolveByToken' };

  constructor(private readonly interrupts: InterruptsService) {}

  handle(_call: EngineCall, request: JsonObject): Promise<unknown> {
    const { token, ...body } = request;
    return this.interrupts.resolveByTokenRequest(text(token), body);
  }
}

/** InspectInterruptByToken: `GET /v1/interrupts/{token}`, the pending interrupt's InterruptPayload. */
@Injectable()
@EngineMethod()
export class InspectInterruptByTokenMethod implements UnaryEngineMethod {
  readonly name = 'InspectInterruptByToken';
  readonly kind = 'unary';
  readonly rest = { controller: InterruptsController, handler: 'inspect' };

  constructor(private readonly interrupts: InterruptsService) {}

  handle(_call: EngineCall, request: JsonObject): Promise<unknown> {
    return this.interrupts.inspect(text(request.token));
  }
}
