import { refusalLine } from './host-client';

describe('CLI host client: the refusal line', () => {
  it('names each validation problem at its path after the envelope', () => {
    const body = {
      error: 'validation_error',
      message: 'inputs do not satisfy the parameters the workflow declares.',
      details: { field: 'inputs', problems: [{ path: '/inputs/version', message: "must have required property 'version'" }, { path: '/inputs/n', message: 'must be integer' }] },
    };
    expect(refusalLine(400, body, '')).toBe("400 validation_error: inputs do not satisfy the parameters the workflow declares. (/inputs/version: must have required property 'version'; /inputs/n: must be integer)");
  });

  it('is the envelope alone without problems, and the raw text without a message', () => {
    expect(refusalLine(404, { error: 'not_found', message: 'No such run.' }, '')).toBe('404 not_found: No such run.');
    expect(refusalLine(502, {}, 'Bad Gateway')).toBe('502 error: Bad Gateway');
    expect(refusalLine(400, { error: 'validation_error', message: 'bad', details: { problems: [{ message: 'no path' }, 'junk'] } }, '')).toBe('400 validation_error: bad (no path)');
  });
});
