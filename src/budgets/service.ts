// Budgets and rate limits as the service runs them: their transactions under DB_DEADLINE_MS, the
// sweep of ended windows, readiness. The store does the SQL (./store.ts); the engine decides what a
// counted call answers (src/engine/limits.ts).
import type { Sql, TransactionSql } from 'postgres';
import { withDeadline } from '../db/deadline.js';
import type { Lanes } from '../db/lanes.js';
import { StoreUnavailableError } from '../db/errors.js';
import type { Standing } from '../policy/limits.js';
import type { Charge } from '../policy/model.js';
import { createCounterStore, lockOrder, standingOfCount, type CounterStore } from './store.js';

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
  /**
   * Counts a call in its one counter, one round trip shorter (on a lane: src/db/lanes.ts): its
   * counter after, or null when it would cross (nothing counted). Undefined without lanes, or when
   * the charge is not counted by a statement: use transaction().
   */
  countOne(charge: Charge, after?: AfterCounting): Promise<Standing | null> | undefined;
  /**
   * Counts a call in all its counters or none, on a lane, in a transaction of its own (several
   * counters: one round trip fewer than transaction()): each charge's counter after, or the charges
   * it would cross (nothing counted). Undefined without lanes, or when a charge is not counted by a
   * statement.
   */
  countAll(
    charges: readonly Charge[],
    after?: AfterCounting,
  ): Promise<{ counted: Map<Charge, Standing> } | { refused: Charge[] }> | undefined;
  close(): Promise<void>;
}

/**
 * What commits with a call counted on a lane, and only if it was counted (the decision's record:
 * src/engine/record.ts): called then, it gives the value the lanes' gather statement writes with
 * the lane's COMMIT (src/db/lanes.ts).
 */
export type AfterCounting = () => string;

export interface LimitServiceOptions {
  deadlineMs: number;
  /** How often ended windows are deleted. Default 60 s. */
  sweepMs?: number;
  /** Whether the migrations have been applied (src/service.ts retries them while the database is down). */
  schemaReady?: () => boolean;
  /** Connections of the counters' own for one-counter calls (closed with the service). */
  lanes?: Lanes;
}

export function createLimitService(sql: Sql, options: LimitServiceOptions): LimitService {
  const store = createCounterStore();
  const schemaReady = options.schemaReady ?? (() => true);
  const transaction = <T>(fn: (tx: TransactionSql) => Promise<T>): Promise<T> =>
    withDeadline(sql, options.deadlineMs, fn);
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
    countOne(charge, after) {
      const { lanes } = options;
      if (lanes === undefined || !store.countedByStatement(charge)) return undefined;
      // The lock order of store.ts (lockOrder): budgets, then rate limits, by id, then by counter.
      const order = `${charge.limit.type === 'budget' ? 0 : 1}\n${charge.limit.id}\n${charge.key}`;
      return lanes
        .run(
          options.deadlineMs,
          order,
          (c) => store.countStatement(c, charge)!,
          after === undefined ? undefined : (rows) => (rows.length > 0 ? after() : null), // counted: its one row
        )
        .then((rows) => standingOfCount(charge.limit, rows));
    },
    countAll(charges, after) {
      const { lanes } = options;
      if (lanes === undefined || !charges.every((c) => store.countedByStatement(c))) return undefined;
      const ordered = lockOrder(charges);
      return lanes
        .runAlone(
          options.deadlineMs,
          (c) => ordered.map((charge) => store.countStatement(c, charge)!),
          (rows) => rows.every((r) => r.length > 0),
          after === undefined ? undefined : () => after(), // accepted: every counter counted
        )
        .then(({ rows, committed }) => {
          if (!committed) return { refused: ordered.filter((_, i) => rows[i]!.length === 0) };
          return { counted: new Map(ordered.map((charge, i) => [charge, standingOfCount(charge.limit, rows[i]!)!])) };
        });
    },
    async close() {
      clearInterval(sweeper);
      await options.lanes?.end();
    },
  };
}
