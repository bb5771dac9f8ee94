// Long-polling for `GET /approvals/{id}?wait=N`: answer as soon as an approval leaves `pending`, on
// any replica, at a cost that does not grow with the number of waits.
//
// - One LISTEN connection per replica (postgres.js keeps it and re-listens after reconnecting); every
//   status change NOTIFYs the approval id (store.ts). A notification for an id somebody waits on
//   reads that approval ONCE, whatever the number of waits on it, and answers them all.
// - Notifications are a shortcut. While anyone waits, one statement per interval asks which of all
//   the awaited ids are settled (store.settled: status only, never the arguments), so a lost
//   notification, a dropped LISTEN connection or a silent expiry delays an answer by one interval.
// - An idle wait costs a timer and a socket, no database work. Waits are capped per caller and per
//   replica (WaitLimitError): one caller cannot hold the replica's capacity.

import type { Sql } from 'postgres';
import { StoreUnavailableError } from '../db/errors.js';
import { APPROVALS_CHANNEL } from './store.js';
import type { Approval } from './approval.js';
import type { ApprovalStore } from './store.js';

export interface ApprovalWaiterOptions {
  /** The interval of the shared re-check while anyone waits. Default 1000 ms. */
  recheckMs?: number;
  /** Waits one caller (`sub`) may hold at once (MAX_WAITS_PER_CALLER). Default 20. */
  maxPerCaller?: number;
  /** Waits this replica holds at once (MAX_WAITS). Default 512, as half of MAX_CONNECTIONS' default. */
  maxTotal?: number;
}

/** A wait (or a live stream, feed.ts) refused because the caller, or the replica, already holds as many as it may. */
export class WaitLimitError extends Error {
  constructor(
    readonly scope: 'caller' | 'replica',
    readonly limit: number,
    readonly what: 'waits' | 'streams' = 'waits',
  ) {
    super(
      scope === 'caller' ? `this caller already holds ${limit} ${what}` : `this replica already holds ${limit} ${what}`,
    );
    this.name = 'WaitLimitError';
  }
}

/**
 * The places a replica's held requests (long-polls and live streams, feed.ts) take: one count for
 * both, per caller (`sub`) and in all, since each holds a connection.
 */
export interface Holds {
  /** Takes a place for `caller`, or throws WaitLimitError at once; returns its release (a second call does nothing). */
  take(caller: string, what: 'waits' | 'streams'): () => void;
  /** Places taken now, in all. */
  readonly size: number;
}

export function createHolds(maxPerCaller: number, maxTotal: number): Holds {
  const perCaller = new Map<string, number>();
  let total = 0;
  return {
    take(caller, what) {
      const held = perCaller.get(caller) ?? 0;
      if (held >= maxPerCaller) throw new WaitLimitError('caller', maxPerCaller, what);
      if (total >= maxTotal) throw new WaitLimitError('replica', maxTotal, what);
      perCaller.set(caller, held + 1);
      total++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        total--;
        const left = (perCaller.get(caller) ?? 1) - 1;
        if (left === 0) perCaller.delete(caller);
        else perCaller.set(caller, left);
      };
    },
    get size() {
      return total;
    },
  };
}

export interface ApprovalWaiter {
  /**
   * `approval` (as just read, pending) once it has left `pending`, re-read; or as it was after timeoutMs
   * (no change seen); or null when it no longer exists. Throws WaitLimitError at once when `caller`
   * or the replica holds too many waits; rejects with signal.reason when aborted.
   */
  waitForChange(
    approval: Approval,
    timeoutMs: number,
    options: { caller: string; signal?: AbortSignal },
  ): Promise<Approval | null>;
  /** How many waits are held now, in all. */
  readonly size: number;
  /** The places waits take, shared with the live streams of the same replica. */
  readonly holds: Holds;
  /** Stops listening; waits in progress answer with what they hold. */
  close(): Promise<void>;
}

interface Wait {
  /** The approval as the caller read it (pending). */
  readonly held: Approval;
  resolve(approval: Approval | null): void;
  reject(reason: unknown): void;
}

export function createApprovalWaiter(
  sql: Sql,
  store: Pick<ApprovalStore, 'get' | 'settled'>,
  options: ApprovalWaiterOptions = {},
): ApprovalWaiter {
  const recheckMs = options.recheckMs ?? 1000;
  const holds = createHolds(options.maxPerCaller ?? 20, options.maxTotal ?? 512);
  // id (lower case) → the waits on it.
  const waiting = new Map<string, Set<Wait>>();
  // Ids being re-read now: one read per id, however many notifications and waits.
  const reading = new Set<string>();
  // Ids newly awaited since the last check: checked together, one statement per event-loop turn.
  const fresh = new Set<string>();
  let total = 0;
  let closed = false;
  let recheck: NodeJS.Timeout | null = null;

  // The approval left pending (or we were told it may have): read it once, answer every wait on it.
  // A read that fails leaves the waits in place; the next re-check tries again.
  const settle = (id: string): void => {
    if (!waiting.has(id) || reading.has(id)) return;
    reading.add(id);
    store.get(id).then(
      (approval) => {
        reading.delete(id);
        if (approval !== null && approval.status === 'pending') return; // a notification of no change
        const waits = waiting.get(id);
        waiting.delete(id);
        for (const w of waits ?? []) w.resolve(approval);
      },
      () => reading.delete(id),
    );
  };

  const check = (ids: string[]): void => {
    if (ids.length === 0) return;
    store.settled(ids).then(
      (settled) => {
        for (const id of settled) settle(id.toLowerCase());
      },
      (error: unknown) => {
        // The database is down: the waits answer what they hold at their deadline. Anything else is
        // a bug, and the waits it concerns fail with it (a 500) rather than wait on blindly.
        if (error instanceof StoreUnavailableError) return;
        for (const id of ids) for (const w of [...(waiting.get(id) ?? [])]) w.reject(error);
      },
    );
  };
  const recheckAll = (): void => check([...waiting.keys()]);
  const checkFresh = (): void => {
    const ids = [...fresh].filter((id) => waiting.has(id));
    fresh.clear();
    check(ids);
  };

  // Called exactly once: postgres.js re-registers this listener itself after a reconnect, and runs the
  // onlisten callback each time, when notifications may have been missed: re-check everything.
  const listening = sql
    // A filing's notification (CREATED_PREFIX) names no id anyone waits on: settle() ignores it.
    .listen(APPROVALS_CHANNEL, (id) => settle(id.toLowerCase()), recheckAll)
    .then(
      (meta) => meta,
      () => null, // unreachable database: the re-checks still run
    );

  function waitForChange(
    approval: Approval,
    timeoutMs: number,
    { caller, signal }: { caller: string; signal?: AbortSignal },
  ): Promise<Approval | null> {
    if (!Number.isFinite(timeoutMs) || timeoutMs < 0) throw new RangeError('timeoutMs must be a finite number ≥ 0');
    signal?.throwIfAborted();
    if (closed || timeoutMs === 0 || approval.status !== 'pending') return Promise.resolve(approval);
    const release = holds.take(caller, 'waits');

    const id = approval.id.toLowerCase();
    return new Promise<Approval | null>((resolve, reject) => {
      const finish = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const set = waiting.get(id);
        if (set?.delete(wait) && set.size === 0) waiting.delete(id);
        total--;
        release();
        if (total === 0 && recheck !== null) {
          clearInterval(recheck);
          recheck = null;
        }
      };
      const wait: Wait = {
        held: approval,
        resolve: (a) => {
          finish();
          resolve(a);
        },
        reject: (reason) => {
          finish();
          reject(reason);
        },
      };
      const onAbort = (): void => wait.reject(signal?.reason);
      // No change seen by the deadline: the approval is still what was read (a pending row's columns
      // never change while it is pending), so no read is needed to answer.
      const timer = setTimeout(() => wait.resolve(approval), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      total++;
      const set = waiting.get(id) ?? new Set<Wait>();
      waiting.set(id, set);
      set.add(wait);
      if (recheck === null) {
        recheck = setInterval(recheckAll, recheckMs);
        recheck.unref();
      }
      // The approval may have changed between the caller's read and this registration, before a
      // notification could reach this wait: a newly awaited id is checked at once, not an interval
      // later, together with the others registered in the same turn.
      if (set.size === 1) {
        if (fresh.size === 0) setImmediate(checkFresh);
        fresh.add(id);
      }
    });
  }

  async function close(): Promise<void> {
    closed = true;
    if (recheck !== null) clearInterval(recheck);
    recheck = null;
    // Every wait answers with what it holds: the approval as it was read, still pending.
    for (const waits of [...waiting.values()]) for (const w of [...waits]) w.resolve(w.held);
    const meta = await listening;
    await meta?.unlisten().catch(() => {});
  }

  return {
    waitForChange,
    get size() {
      return total;
    },
    holds,
    close,
  };
}
