// Long-polling for `GET /approvals/{id}?wait=N`: resolve as soon as an approval leaves `pending`, on
// any replica. One LISTEN per instance (postgres.js keeps a dedicated connection for it and re-listens
// after reconnecting); every status change NOTIFYs the approval id (store.ts). Notifications are only a
// shortcut: each wait also re-reads on a bounded interval, so a lost notification or a dropped LISTEN
// connection delays an answer by at most that interval, and never hangs it.

import type { Sql } from 'postgres';
import { StoreUnavailableError } from '../db/errors.js';
import { APPROVALS_CHANNEL } from './store.js';
import type { Approval, ApprovalStore } from './store.js';

export interface ApprovalWaiterOptions {
  /** Fallback re-read interval while waiting. Default 1000 ms. */
  recheckMs?: number;
}

export interface ApprovalWaiter {
  /**
   * The approval once its status is not `pending`, or as it is after timeoutMs (still pending), or null
   * when there is no such approval. Rejects with StoreUnavailableError when the store cannot answer,
   * and with signal.reason when aborted.
   */
  waitForChange(id: string, timeoutMs: number, signal?: AbortSignal): Promise<Approval | null>;
  /** Stops listening; waits in progress return what they last read. */
  close(): Promise<void>;
}

export function createApprovalWaiter(
  sql: Sql,
  store: Pick<ApprovalStore, 'get'>,
  options: ApprovalWaiterOptions = {},
): ApprovalWaiter {
  const recheckMs = options.recheckMs ?? 1000;
  // id → wake-up callbacks of the waits on it.
  const waiting = new Map<string, Set<() => void>>();
  let closed = false;

  const wakeAll = (): void => waiting.forEach((wakers) => wakers.forEach((wake) => wake()));
  // Called exactly once: postgres.js re-registers this listener itself after a reconnect, and runs the
  // onlisten callback each time, when notifications may have been missed: everyone re-reads.
  const listening = sql
    .listen(
      APPROVALS_CHANNEL,
      (id) => waiting.get(id)?.forEach((wake) => wake()),
      wakeAll,
    )
    .then(
      (meta) => meta,
      () => null, // unreachable database: the re-reads still answer (or fail) every wait
    );

  async function waitForChange(id: string, timeoutMs: number, signal?: AbortSignal): Promise<Approval | null> {
    if (!Number.isFinite(timeoutMs) || timeoutMs < 0) throw new RangeError('timeoutMs must be a finite number ≥ 0');
    signal?.throwIfAborted();
    const key = id.toLowerCase();
    const deadline = Date.now() + timeoutMs;
    let woken = false;
    let wakeNow: (() => void) | null = null;
    const wake = (): void => {
      woken = true;
      wakeNow?.();
    };
    const wakers = waiting.get(key) ?? new Set();
    waiting.set(key, wakers);
    wakers.add(wake);
    const onAbort = (): void => wake();
    signal?.addEventListener('abort', onAbort);

    try {
      // Subscribed before the first read, so a change between the read and the wait is not missed
      // (once LISTEN is up; the periodic re-read covers the time before).
      await raceTimeout(listening, Math.min(timeoutMs, recheckMs));
      let approval = await store.get(id);
      while (approval !== null && approval.status === 'pending' && !closed) {
        const left = deadline - Date.now();
        if (left <= 0) break;
        if (!woken) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, Math.min(left, recheckMs));
            wakeNow = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wakeNow = null;
        }
        woken = false;
        signal?.throwIfAborted();
        if (closed) break;
        const final = Date.now() >= deadline;
        try {
          approval = await store.get(id);
        } catch (error) {
          // A blip mid-wait is retried at the next re-read; only the last read must succeed.
          if (final || !(error instanceof StoreUnavailableError)) throw error;
        }
      }
      return approval;
    } finally {
      wakers.delete(wake);
      if (wakers.size === 0) waiting.delete(key);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async function close(): Promise<void> {
    closed = true;
    wakeAll();
    const meta = await listening;
    await meta?.unlisten().catch(() => {});
  }

  return { waitForChange, close };
}

/** Waits for promise, or ms, whichever comes first (the promise's outcome is not needed). */
function raceTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, Math.max(0, ms));
    void promise.finally(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
