import { v2RunError } from './v2-envelope';

describe('v2 run error codes', () => {
  it('spells a rejected approval approval_rejected and never retryable at major 2; every other code and shape passes unchanged', () => {
    expect(v2RunError({ code: 'approval_denied', message: 'The approval gate was denied or expired.' })).toEqual({ code: 'approval_rejected', message: 'The approval gate was denied or expired.', retryable: false });
    const other = { code: 'conformance_failure', message: 'x', details: { a: 1 } };
    expect(v2RunError(other)).toBe(other);
    for (const v of [undefined, null, 'approval_denied', ['approval_denied'], { message: 'no code' }]) expect(v2RunError(v)).toBe(v);
  });
});
