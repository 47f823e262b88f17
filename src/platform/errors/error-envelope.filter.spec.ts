import { BadRequestException, NotFoundException } from '@nestjs/common';
import { SchemaRegistry } from '../schemas/schema-registry';
import { DomainError, UnprocessableError } from './domain-error';
import { toEnvelope } from './error-envelope.filter';
import { ExtensionFault, InternalFault, InvariantViolation, WiringFault } from './internal-fault';

const valid = (body: unknown) => expect(SchemaRegistry.shared().validate('error-envelope', body)).toEqual([]);

describe('error envelope', () => {
  it('hides an unexpected failure behind internal_error with a correlation id', () => {
    const { status, body } = toEnvelope(new Error('db password is hunter2'), 'req-1');
    expect(status).toBe(500);
    expect(body).toEqual({ error: 'internal_error', message: 'The host failed to handle the request.', details: { correlationId: 'req-1' } });
    expect(JSON.stringify(body)).not.toContain('hunter2');
    valid(body);
  });

  it('answers an internal fault exactly like any unexpected failure: its fault and message stay in the logs', () => {
    const plain = toEnvelope(new Error('the invocation log lost a claimed effect'), 'req-2');
    for (const fault of [new InternalFault('aborted', 'x'), new WiringFault('x'), new InvariantViolation('the invocation log lost a claimed effect'), new ExtensionFault('x')]) {
      expect(fault).toBeInstanceOf(Error);
      expect(toEnvelope(fault, 'req-2')).toEqual(plain);
    }
    // No `code`: the run engine and the activity ledger record any error's string `code` as the protocol's.
    expect('code' in new InvariantViolation('x')).toBe(false);
    expect(new InvariantViolation('x')).toMatchObject({ name: 'InvariantViolation', fault: 'invariant', message: 'x' });
  });

  it('writes domain errors with their code, status and details', () => {
    const { status, body } = toEnvelope(new UnprocessableError('bounds_required', 'Goals need bounds.', { field: 'bounds' }), 'r');
    expect(status).toBe(422);
    expect(body).toEqual({ error: 'bounds_required', message: 'Goals need bounds.', details: { field: 'bounds' } });
    valid(body);
    const five = toEnvelope(new DomainError('upstream_unavailable', 503, 'Down.'), 'r2');
    expect(five.body.details).toEqual({ correlationId: 'r2' });
  });

  it('normalises Nest exceptions, including validation lists', () => {
    const v = toEnvelope(new BadRequestException(['a must be a string', 'b should not exist']), 'r');
    expect(v).toEqual({ status: 400, body: { error: 'validation_error', message: 'The request is malformed.', details: { fields: ['a must be a string', 'b should not exist'] } } });
    valid(v.body);
    const nf = toEnvelope(new NotFoundException('Cannot GET /nope'), 'r');
    expect(nf.body).toEqual({ error: 'not_found', message: 'No such route.' });
  });

  it('maps Fastify errors by code', () => {
    expect(toEnvelope({ code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413, message: 'x' }, 'r').body.error).toBe('payload_too_large');
    expect(toEnvelope({ code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415, message: 'x' }, 'r').status).toBe(415);
    expect(toEnvelope(Object.assign(new SyntaxError('Unexpected token'), { statusCode: 400 }), 'r').body).toEqual({ error: 'validation_error', message: 'The body is not valid JSON.' });
  });
});
