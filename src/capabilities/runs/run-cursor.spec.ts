import { DomainError } from '../../platform/errors/domain-error';
import { decodeRunCursor, encodeRunCursor } from './run-cursor';

describe('run cursor', () => {
  it('round-trips', () => {
    const c = { createdAt: '2026-12-03T05:00:00.123456Z', runId: '6f1c1b7e-2f7a-4f55-9f3b-0d6b8a6e1c2d' };
    expect(decodeRunCursor(encodeRunCursor(c))).toEqual(c);
  });

  it.each(['', 'not base64!', Buffer.from('{"a":1}').toString('base64url'), Buffer.from('["x","y"]').toString('base64url'), 'a'.repeat(300)])(
    'refuses %p with validation_error',
    (raw) => {
      let err: unknown;
      try {
        decodeRunCursor(raw);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(DomainError);
      expect((err as DomainError).code).toBe('validation_error');
      expect((err as DomainError).status).toBe(400);
    },
  );
});
