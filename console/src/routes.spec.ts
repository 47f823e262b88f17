import { href, isRunId, parseHash } from './routes';

describe('console hash routes', () => {
  it('reads a page and an optional id, and writes them back URI-encoded', () => {
    expect(parseHash('')).toEqual({ page: '' });
    expect(parseHash('#/runs')).toEqual({ page: 'runs' });
    expect(parseHash('#/runs/3f2a9c1b-0000-4000-8000-000000000000')).toEqual({ page: 'runs', id: '3f2a9c1b-0000-4000-8000-000000000000' });
    expect(href('tools', 'workflow:acme.quick')).toBe('#/tools/workflow%3Aacme.quick');
    expect(parseHash(href('tools', 'workflow:acme.quick'))).toEqual({ page: 'tools', id: 'workflow:acme.quick' });
    expect(parseHash(href('proposals', 'a/b c'))).toEqual({ page: 'proposals', id: 'a/b c' });
    // A malformed escape is ignored rather than breaking the page.
    expect(parseHash('#/goals/%E0%A4%A')).toEqual({ page: 'goals' });
  });

  it('tells run ids of this host (UUIDs) from other ids', () => {
    expect(isRunId('3f2a9c1b-0000-4000-8000-000000000000')).toBe(true);
    expect(isRunId('run-a1')).toBe(false);
  });
});
