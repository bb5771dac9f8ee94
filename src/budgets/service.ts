// Budgets and rate limits as the service runs them: their transactions under DB_DEADLINE_MS, the
// sweep of ended windows, readiness. The store does the SQL (./store.ts); the routes decide what a
// counted call answers (src/http/counted.ts).
import type { Sql, TransactionSql } from 'postgres';
import { withDeadline } from '../db/deadline.js';
import { StoreUnavailableError } from '../db/errors.js';
import { createCounterStore, type CounterStore } from './store.js';

export interface LimitService {
  readonly store: CounterStore;
  /** Throws StoreUnavailableError (503) while the database schema is not in place yet. */
  ensureReady(): void;
  /**
   * `fn` in one transaction, bounded by DB_DEADLINE_MS: past it the caller gets StoreUnavailableError
   * (503) and the transaction never commits, so a call answered 503 is never counted later
   * (src/db/deadline.ts).
   */
  transaction<T>(fn: (tx: TransactionSql) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface LimitServiceOptions {
  deadlineMs: number;
  /** How often ended windows are deleted. Default 60 s. */
  sweepMs?: number;
  /** Whether the migrations have been applied (src/service.ts retries them while the database is down). */
  schemaReady?: () => boolean;
}

export function createLimitService(sql: Sql, options: LimitServiceOptions): LimitService {
  const store = createCounterStore();
  const schemaReady = options.schemaReady ?? (() => true);
  const transaction = <T>(fn: (tx: TransactionSql) => Promise<T>): Promise<T> => withDeadline(sql, options.deadlineMs, fn);
  // Housekeeping only: a counter of an ended window is never read again (every statement computes
  // the current window), so a sweep that does not run costs space, never correctness.
  const sweeper = setInterval(() => {
    if (schemaReady()) transaction((tx) => store.sweep(tx)).catch(() => undefined); // a down database is /readyz's to report
  }, options.sweepMs ?? 60_000);
  sweeper.unref();
  return {
    store,
    ensureReady() {
      if (!schemaReady()) throw new StoreUnavailableError('connection');
    },
    transaction,
    async close() {
      clearInterval(sweeper);
    },
  };
}
