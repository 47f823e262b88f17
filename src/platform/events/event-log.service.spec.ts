import type { DataSource } from 'typeorm';
import type { DatabaseNotifications } from '../database/database-notifications';
import type { MetricsService } from '../metrics/metrics.service';
import { EventLogService, RunEventView } from './event-log.service';

const scope = { tenant: 't' };
const event: RunEventView = { eventId: 'e1', runId: 'r1', type: 'node.started', payload: {}, timestamp: new Date(0).toISOString(), sequence: 1 };

describe('EventLogService.poll', () => {
  const service = () => new EventLogService({} as DataSource, {} as MetricsService, { live: false } as DatabaseNotifications);

  it('wakes at once for an append that lands while the waiter is still reading', async () => {
    const log = service();
    let reads = 0;
    jest.spyOn(log, 'read').mockImplementation(async () => {
      reads++;
      if (reads === 1) {
        // The append commits and wakes pollers while this read is in flight; the read missed it.
        await new Promise((r) => setTimeout(r, 20));
        log.wake();
        await new Promise((r) => setTimeout(r, 20));
        return [];
      }
      return [event];
    });
    const started = Date.now();
    const got = await log.poll(scope, 'r1', 0, 5000);
    expect(got).toEqual([event]);
    expect(reads).toBe(2);
    // Not the 500 ms re-check: the second read follows the first directly.
    expect(Date.now() - started).toBeLessThan(300);
  });

  it('waits for a wake when nothing was appended during the read, and returns at its deadline', async () => {
    const log = service();
    let reads = 0;
    jest.spyOn(log, 'read').mockImplementation(async () => (++reads === 3 ? [event] : []));
    const started = Date.now();
    setTimeout(() => log.wake(), 100);
    expect(await log.poll(scope, "r1", 0, 5000)).toEqual([event]);
    // First read empty, woken at ~100 ms, second read empty, then the deadline is not reached before the
    // next re-check (500 ms): the third read answers.
    expect(reads).toBe(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
  });

  it('answers an empty page at the deadline', async () => {
    const log = service();
    jest.spyOn(log, 'read').mockResolvedValue([]);
    const started = Date.now();
    expect(await log.poll(scope, 'r1', 0, 120)).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(110);
  });
});
