// One-statement transactions for many callers at once, with the same promise as withDeadline
// (deadline.ts): a call answered 503 never commits later.
//
// Why: on a budgeted /decide, the round trips to PostgreSQL cost Gatehouse more CPU than everything
// else the call does (each write wakes a sleeping backend: docs/performance.md), and sql.begin
// spends three on a one-statement transaction (BEGIN, the statement, COMMIT). A lane is a postgres.js
// pool of ONE connection, used by one transaction at a time; on it BEGIN may be written as a plain
// query, with the statements right behind it in the same packet. And the calls waiting when a lane
// comes free go into its transaction together (as PostgreSQL's group commit shares a WAL flush):
// one BEGIN, their statements in one lock order, one COMMIT. Under light load a transaction holds one
// call; under heavy load, up to MAX_BATCH, and the round trips per call fall as the load rises.
// (postgres.js's own way to hold one connection, sql.reserve(), never resolves when it has to open
// the connection itself, in 3.4.9.)
//
// Each call:
//   waiting ──(in a lane's transaction)──> running ──(every statement answered, flags re-checked)──> committing
//      │                                      │
//      └──────────(its timer fires)───────────┴──> abandoned   (the caller is rejected now; its
//                                                               transaction is rolled back)
// A transaction with an abandoned call, or a failed statement, is rolled back whole: the other calls
// of a rolled-back transaction go back to the front of the queue (nothing of them was committed),
// or, after a failed statement, are answered its failure (503 when the database is at fault).
//
// Statements run in their callers' `order` (a lock order), so two transactions never wait for each
// other's rows in a cycle. A call of several statements that must commit together or not at all
// (runAlone) takes a transaction to itself, and commits it only if its rows say so. BEGIN sets `gatehouse.in_transaction` and every statement must change
// nothing unless it reads 'on' (IN_TRANSACTION): were BEGIN ever to fail, the statements behind it
// would run on their own, and commit by themselves, otherwise.

import type { PendingQuery, Row, Sql } from 'postgres';
import { createSql, type SqlOptions } from './connect.js';
import { connectionGone } from './deadline.js';
import { OutcomeUnknownError, StoreUnavailableError, toStoreError } from './errors.js';
import { commitOutcome, idleLimit, readMark, type CommitOutcome } from './outcome.js';

/** The guard a statement run by Lanes.run must hold in each of its WHERE clauses. */
export const IN_TRANSACTION = "current_setting('gatehouse.in_transaction', true) = 'on'";
// Also the transaction's mark and the server's deadline for its COMMIT (outcome.ts): every transaction
// here writes, so taking its id at BEGIN costs nothing, and it rides in BEGIN's packet.
const begin = (ms: number): string =>
  `begin; set local gatehouse.in_transaction = 'on'; ${idleLimit(ms)}; select pg_current_xact_id()::text as xid, pg_backend_pid() as pid`;
/** The most calls one transaction holds. */
const MAX_BATCH = 32;

export interface Lanes {
  /**
   * `statement` in a transaction (maybe with other callers' statements) under a deadline of `ms`,
   * waiting for a lane included: its rows once committed, or StoreUnavailableError (503) and nothing
   * committed, ever. `order` places it among the others (the rows it locks, as a sortable key).
   */
  run<T extends Row[]>(ms: number, order: string, statement: (c: Sql) => PendingQuery<T>, then?: Then<T>): Promise<T>;
  /**
   * Several statements in a transaction of their own (written behind BEGIN in one packet, in the
   * order given: the caller's lock order), committed only when `accept` says so of their rows, else
   * rolled back: all or nothing. Resolves with the rows and whether they were committed.
   */
  runAlone(
    ms: number,
    statements: (c: Sql) => PendingQuery<Row[]>[],
    accept: (rows: Row[][]) => boolean,
    then?: Then<Row[][]>,
  ): Promise<{ rows: Row[][]; committed: boolean }>;
  end(): Promise<void>;
}

/**
 * What a call adds to its transaction once its rows are in: a value for the lanes' `gather`
 * statement, or null for none. Called only when the lanes have one (createLanes).
 */
export type Then<T> = (rows: T) => string | null;

/**
 * One statement over the values a transaction's calls gave (`then`), sent in COMMIT's packet (no
 * round trip of its own): it commits with their statements or not at all. When it fails, nothing
 * of the transaction commits, and every call of it is answered the failure.
 */
export type Gather = (c: Sql, values: readonly string[]) => PendingQuery<Row[]>;

interface Call {
  readonly ms: number;
  readonly order: string;
  readonly statements: (c: Sql) => PendingQuery<Row[]>[];
  /** Set for a call that runs alone: whether its statements' rows may commit. */
  readonly accept?: (rows: Row[][]) => boolean;
  readonly then?: Then<Row[][]>;
  phase: 'waiting' | 'running' | 'committing' | 'abandoned' | 'done';
  resolve(rows: Row[][], committed: boolean): void;
  reject(error: unknown): void;
  timer: NodeJS.Timeout;
  /** Set while committing: its deadline passed with COMMIT's answer not in. */
  late?: () => void;
}

export function createLanes(url: string, count: number, options: SqlOptions = {}, gather?: Gather): Lanes {
  const lanes = Array.from({ length: count }, () => createSql(url, { ...options, max: 1 }));
  // Where a commit's outcome is looked up: never the lane whose answer was lost (connects on first use).
  const lookups = createSql(url, { ...options, max: 1, applicationName: 'gatehouse-outcome' });
  const idle = [...lanes];
  const queue: Call[] = [];

  const pump = (): void => {
    while (idle.length > 0 && queue.length > 0) {
      // A call that runs alone takes a transaction to itself; the others share one, in arrival order.
      let n = 1;
      if (queue[0]!.accept === undefined)
        while (n < queue.length && n < MAX_BATCH && queue[n]!.accept === undefined) n++;
      void runBatch(idle.pop()!, queue.splice(0, n)); // idle is not empty
    }
  };

  const finish = (call: Call, outcome: { rows: Row[][]; committed: boolean } | { error: unknown }): void => {
    clearTimeout(call.timer);
    if (call.phase === 'abandoned' || call.phase === 'done') return; // already answered
    call.phase = 'done';
    if ('rows' in outcome) call.resolve(outcome.rows, outcome.committed);
    else call.reject(outcome.error);
  };

  async function runBatch(lane: Sql, batch: Call[]): Promise<void> {
    for (const call of batch) call.phase = 'running';
    batch.sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
    const begun = lane.unsafe(begin(Math.max(...batch.map((call) => call.ms))));
    const perCall = batch.map((call) => call.statements(lane));
    const [b, ...q] = await Promise.allSettled([begun, ...perCall.flat()]);
    const failed = [b, ...q].find((r): r is PromiseRejectedResult => r.status === 'rejected');
    const abandoned = batch.some((call) => call.phase === 'abandoned');
    // Each call's rows, in the order of its statements.
    const rowsOf: Row[][][] = [];
    let at = 0;
    for (const statements of perCall) {
      rowsOf.push(q.slice(at, at + statements.length).map((r) => (r.status === 'fulfilled' ? [...r.value] : [])));
      at += statements.length;
    }
    const alone = batch.length === 1 && batch[0]!.accept !== undefined ? batch[0]! : null;
    if (failed === undefined && !abandoned && alone !== null && !alone.accept!(rowsOf[0]!)) {
      // Not accepted: nothing of it commits (all or nothing), and it says so.
      await lane`rollback`.catch(() => undefined);
      idle.push(lane);
      finish(alone, { rows: rowsOf[0]!, committed: false });
      pump();
      return;
    }
    if (failed !== undefined || abandoned) {
      // A connection that went away took its transaction with it; otherwise end ours.
      if (failed === undefined || !connectionGone(failed.reason)) await lane`rollback`.catch(() => undefined);
      idle.push(lane);
      for (const call of batch) {
        if (call.phase !== 'running') continue;
        if (failed !== undefined) finish(call, { error: toStoreError(failed.reason) });
        else {
          call.phase = 'waiting'; // rolled back, nothing of it committed: its turn again, first
          queue.unshift(call);
        }
      }
      pump();
      return;
    }
    // Sent in COMMIT's packet, ahead of it: a statement that fails aborts the transaction, and COMMIT
    // then answers ROLLBACK (read below).
    const values =
      gather === undefined
        ? []
        : batch.flatMap((call, i) => {
            const value = call.then?.(rowsOf[i]!);
            return value == null ? [] : [value];
          });
    const afterDone = Promise.allSettled(values.length > 0 && gather !== undefined ? [gather(lane, values)] : []);
    for (const call of batch) call.phase = 'committing'; // from here its timer no longer abandons it
    // COMMIT's answer lost with its connection, or late at a deadline: every call of the transaction
    // is answered what PostgreSQL says happened (outcome.ts), never a guess.
    // BEGIN's packet answers one result per statement that returns rows: the mark's is the last.
    const mark = Promise.resolve(b?.status === 'fulfilled' ? readMark((b.value as unknown as Row[][]).at(-1)) : null);
    let outcome: Promise<CommitOutcome> | null = null;
    const lookUp = (cause: unknown): void => {
      if (outcome !== null) return;
      outcome = commitOutcome(lookups, mark, Math.max(...batch.map((call) => call.ms)));
      void outcome.then((found) => {
        batch.forEach((call, i) => {
          if (found === 'committed') finish(call, { rows: rowsOf[i]!, committed: true });
          else if (found === 'aborted') finish(call, { error: toStoreError(cause) });
          else finish(call, { error: new OutcomeUnknownError({ cause }) });
        });
      });
    };
    for (const call of batch) call.late = () => lookUp(new StoreUnavailableError('deadline'));
    try {
      const done = await lane`commit`;
      const gathered: PromiseSettledResult<unknown>[] = await afterDone;
      const refused = gathered.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (refused !== undefined || done.command !== 'COMMIT') {
        // Rolled back: no call of it committed anything.
        const error = toStoreError(refused?.reason ?? new Error(`COMMIT answered ${done.command}`));
        for (const call of batch) finish(call, { error });
        return;
      }
      batch.forEach((call, i) => {
        finish(call, { rows: rowsOf[i]!, committed: true });
      });
    } catch (error) {
      if (connectionGone(error)) lookUp(error);
      else for (const call of batch) finish(call, { error: toStoreError(error) });
    } finally {
      idle.push(lane);
      pump();
    }
  }

  const enqueue = (
    ms: number,
    order: string,
    statements: (c: Sql) => PendingQuery<Row[]>[],
    accept: ((rows: Row[][]) => boolean) | undefined,
    then: Then<Row[][]> | undefined,
  ): Promise<{ rows: Row[][]; committed: boolean }> =>
    new Promise((resolve, reject) => {
      const call: Call = {
        ms,
        order,
        statements,
        ...(accept !== undefined ? { accept } : {}),
        ...(then !== undefined ? { then } : {}),
        phase: 'waiting',
        resolve: (rows, committed) => resolve({ rows, committed }),
        reject,
        timer: setTimeout(() => {
          if (call.phase === 'committing') return call.late?.();
          if (call.phase === 'done') return;
          if (call.phase === 'waiting') queue.splice(queue.indexOf(call), 1);
          call.phase = 'abandoned';
          reject(new StoreUnavailableError('deadline'));
        }, ms),
      };
      queue.push(call);
      pump();
    });

  return {
    async run<T extends Row[]>(
      ms: number,
      order: string,
      statement: (c: Sql) => PendingQuery<T>,
      then?: Then<T>,
    ): Promise<T> {
      // Its rows go back to this caller, as the statement's T.
      const { rows } = await enqueue(
        ms,
        order,
        (c) => [statement(c) as unknown as PendingQuery<Row[]>],
        undefined,
        then === undefined ? undefined : (all) => then(all[0] as unknown as T),
      );
      return rows[0] as unknown as T;
    },
    runAlone(ms, statements, accept, then) {
      return enqueue(ms, '', statements, accept, then);
    },
    async end() {
      for (const call of queue.splice(0)) finish(call, { error: new StoreUnavailableError('connection') });
      await Promise.all([...lanes, lookups].map((l) => l.end({ timeout: 5 })));
    },
  };
}
