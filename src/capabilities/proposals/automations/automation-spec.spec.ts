import { nextRunAfter, validateAutomation } from './automation-spec';

const base = { name: 'nightly', schedule: { cron: '0 2 * * *' }, action: { type: 'start-run', workflowId: 'reports.nightly' } };

describe('automation spec', () => {
  it('accepts cron and interval schedules', () => {
    expect(validateAutomation(base)).toEqual([]);
    expect(validateAutomation({ ...base, schedule: { intervalMs: 60000 }, enabled: false })).toEqual([]);
    expect(validateAutomation({ ...base, schedule: { cron: '0 2 * * *', timezone: 'Europe/Berlin' } })).toEqual([]);
  });

  it.each([
    ['a bad cron', { ...base, schedule: { cron: 'every night ok' } }],
    ['a bad time zone', { ...base, schedule: { cron: '0 2 * * *', timezone: 'Mars/Olympus' } }],
    ['a tiny interval', { ...base, schedule: { intervalMs: 5 } }],
    ['both schedule forms', { ...base, schedule: { cron: '0 2 * * *', intervalMs: 60000 } }],
    ['an unknown action', { ...base, action: { type: 'shell', workflowId: 'x' } }],
    ['no name', { schedule: base.schedule, action: base.action }],
    ['an unknown field', { ...base, owner: 'me' }],
  ])('refuses %s', (_label, spec) => {
    expect(validateAutomation(spec as Record<string, unknown>).length).toBeGreaterThan(0);
  });

  it('computes the next slot strictly after now; missed slots collapse into one', () => {
    const now = new Date('2026-03-01T12:00:00.000Z');
    expect(nextRunAfter({ cron: '0 2 * * *' }, now).toISOString()).toBe('2026-03-02T02:00:00.000Z');
    expect(nextRunAfter({ cron: '0 2 * * *', timezone: 'America/New_York' }, now).toISOString()).toBe('2026-03-02T07:00:00.000Z');
    expect(nextRunAfter({ intervalMs: 60000 }, now).toISOString()).toBe('2026-03-01T12:01:00.000Z');
  });
});

describe('schedule horizon (RFC 0052 maxFutureHorizon)', () => {
  it('refuses a cron that never fires (an interval is capped at a year by the schema)', () => {
    expect(validateAutomation({ ...base, schedule: { cron: '0 0 30 2 *' } })).toEqual([{ path: '/schedule/cron', message: expect.stringContaining('schedule_horizon_exceeded') }]);
  });

  it('accepts a yearly and a leap-day schedule', () => {
    expect(validateAutomation({ ...base, schedule: { cron: '0 0 1 1 *' } })).toEqual([]);
    expect(validateAutomation({ ...base, schedule: { cron: '0 0 29 2 *' } })).toEqual([]);
  });
});
