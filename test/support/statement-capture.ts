import { AsyncLocalStorage } from 'node:async_hooks';
import { Client } from 'pg';

/** One statement the host sent through the `pg` driver: its text, its name when prepared, its values and the rows it answered. */
export interface CapturedStatement {
  text: string;
  /** A named (prepared) statement's name. */
  name?: string;
  params: unknown[];
  /** The rows it answered (once it has). */
  rows: Array<Record<string, unknown>>;
}

type Query = (...args: unknown[]) => unknown;

/**
 * Counts and keeps the statements a piece of work sends (a request, say), read in the `pg` driver, so a
 * test bounds round trips instead of describing them: `install()` in beforeAll, `restore()` in
 * afterAll, `during(fn)` for the statements sent in `fn`'s async context, `exit(fn)` for work started
 * there that is not its own (a run's execution).
 */
export class StatementCapture {
  private readonly store = new AsyncLocalStorage<CapturedStatement[]>();
  private original?: Query;

  install(): void {
    const proto = Client.prototype as unknown as { query: Query };
    const original = proto.query;
    this.original = original;
    const store = this.store;
    proto.query = function (this: unknown, ...args: unknown[]) {
      const result = original.apply(this, args);
      const into = store.getStore();
      if (into) {
        const [first, second] = args as [string | { text?: string; name?: string; values?: unknown[] }, unknown];
        const seen: CapturedStatement = {
          text: (typeof first === 'string' ? first : first?.text) ?? '?',
          name: typeof first === 'string' ? undefined : first?.name,
          params: (typeof first === 'string' ? (Array.isArray(second) ? second : []) : first?.values) ?? [],
          rows: [],
        };
        into.push(seen);
        // The rows, when the call answers a promise (every statement TypeORM and the host send).
        void (result as Promise<{ rows?: Array<Record<string, unknown>> }> | undefined)?.then?.((r) => void (seen.rows = r?.rows ?? []), () => undefined);
      }
      return result;
    };
  }

  restore(): void {
    if (this.original) (Client.prototype as unknown as { query: Query }).query = this.original;
    this.original = undefined;
  }

  async during<T>(fn: () => Promise<T>): Promise<{ result: T; statements: CapturedStatement[] }> {
    const statements: CapturedStatement[] = [];
    const result = await this.store.run(statements, fn);
    return { result, statements };
  }

  exit<T>(fn: () => T): T {
    return this.store.exit(fn);
  }
}

/** A statement's text on one line, cut to `max` characters (for messages and comparisons). */
export const oneLine = (text: string, max: number): string => text.replace(/\s+/g, ' ').slice(0, max);
