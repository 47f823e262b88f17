import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { map, Observable } from 'rxjs';
import { stringifyVerbatim } from './json-text';

/**
 * For routes whose answers embed stored JSON text that must reach the client byte for byte (a
 * proposal's artifact): serializes the handler's result with `stringifyVerbatim`.
 */
@Injectable()
export class VerbatimJsonInterceptor implements NestInterceptor {
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const reply = ctx.switchToHttp().getResponse<FastifyReply>();
    return next.handle().pipe(
      map((body: unknown) => {
        if (body === undefined || body === null || typeof body !== 'object') return body;
        reply.header('content-type', 'application/json; charset=utf-8');
        return stringifyVerbatim(body);
      }),
    );
  }
}

/** The request body exactly as received (kept by the host's JSON parser), or undefined. */
export function rawBodyText(req: FastifyRequest): string | undefined {
  const raw = (req as FastifyRequest & { rawBody?: string | Buffer }).rawBody;
  return typeof raw === 'string' ? raw : Buffer.isBuffer(raw) ? raw.toString('utf8') : undefined;
}
