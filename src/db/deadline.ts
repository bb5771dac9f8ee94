// An application deadline for one transaction. postgres.js bounds opening a connection
// (connect_timeout) but not waiting for a free one: with every pooled connection busy, a query waits
// in an internal queue with no timer (porsager/postgres#824). A request must fail fast instead
// (503 + Retry-After), and — the part that matters — a call that failed this way must NEVER commit
// later, or a client told "unavailable" could find its grant or consume applied after it retried.
//
// One small state machine per call:
//
//   waiting ──(got a connection)──> running ──(fn returned, flag re-checked)──> committing
//      │                               │
//      └──────(timer fires)────────────┴──> abandoned   (caller rejected now; the transaction, if it
//                                                        ever starts or finishes, throws → ROLLBACK)
//
// The transaction reads the flag when postgres.js hands it its connection and again right before it
// returns (returning is what makes postgres.js send COMMIT). Both checks and the timer run on the
// one JS thread, so there is no interleaving between "check" and "enter committing". Once committing,
// the timer no longer abandons the call: when COMMIT's answer is late at the deadline, or lost with
// its connection, the outcome is looked up (outcome.ts) and answered as it is: the value if it
// committed, 503 if it did not, OutcomeUnknownError (504) if nothing can be learned within another
// `ms`. Nothing waits for a link that went dark.

import type { Sql, TransactionSql } from 'postgres';
import { OutcomeUnknownError, StoreUnavailableError, toStoreError } from './errors.js';
import { commitOutcome, idleLimit, MARK, readMark, type TransactionMark } from './outcome.js';

type Phase = 'waiting' | 'running' | 'committing' | 'abandoned';

// Thrown inside an abandoned transaction to make postgres.js roll it back; nobody sees it.
class Abandoned extends Error {}

// Errors after which the transaction's connection is gone: postgres.js's own transport errors, socket
// errors, and any FATAL/PANIC from the server (pg_terminate_backend, a shutdown, a session timeout),
// which always ends the session.
const CONNECTION_GONE: ReadonlySet<string> = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECTION_ENDED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
]);

export function connectionGone(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, severity } = error as { code?: unknown; severity?: unknown };
  return severity === 'FATAL' || severity === 'PANIC' || (typeof code === 'string' && CONNECTION_GONE.has(code));
}

// postgres.js 3.4.9 (porsager/postgres#1154, #1208, open): when a transaction callback rejects,
// sql.begin sends ROLLBACK on the callback's connection even when that connection has just died; the
// write is deferred with setImmediate and then dereferences the closed socket, an uncaught TypeError
// that takes the whole process down (and /decide with it). So a callback whose connection is gone
// never settles: sql.begin rejects by itself when the connection closes (it races its scope against
// the connection's close), no ROLLBACK is written, and the server rolls back the dead session.
// (A fresh promise each time: one shared never-settling promise would keep every waiter alive.)
const never = (): Promise<never> => new Promise<never>(() => {});

export function withDeadline<T>(sql: Sql, ms: number, fn: (tx: TransactionSql) => Promise<T>): Promise<T> {
  let phase: Phase = 'waiting';
  // A call, not a comparison: TypeScript would narrow `phase` across the await below as if the timer
  // could not change it meanwhile.
  const abandoned = (): boolean => phase === 'abandoned';
  return new Promise<T>((resolve, reject) => {
    let answered = false;
    const answer = (act: () => void): void => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      act();
    };
    // Set once COMMIT is on its way: the transaction's value, and what it says of itself (outcome.ts).
    let value: T;
    let mark: Promise<TransactionMark | null> = Promise.resolve(null);
    let lookingUp = false;
    // COMMIT's answer was lost, or is late: answer what PostgreSQL says happened, never a guess.
    const lookUp = (cause: unknown): void => {
      if (lookingUp) return;
      lookingUp = true;
      void commitOutcome(sql, mark, ms).then((outcome) =>
        answer(() => {
          if (outcome === 'committed') resolve(value);
          // Not committed: the 503 of the lost connection, or of the deadline.
          else if (outcome === 'aborted') reject(toStoreError(cause));
          else reject(new OutcomeUnknownError({ cause }));
        }),
      );
    };
    const timer = setTimeout(() => {
      if (phase === 'committing') return lookUp(new StoreUnavailableError('deadline'));
      phase = 'abandoned';
      answer(() => reject(new StoreUnavailableError('deadline')));
    }, ms);

    sql
      .begin(async (tx) => {
        if (abandoned()) throw new Abandoned();
        phase = 'running';
        // Sent with the first statement, not awaited: a COMMIT that reaches the server later than
        // this finds the transaction ended (outcome.ts).
        void tx.unsafe(idleLimit(ms)).execute();
        try {
          value = await fn(tx);
        } catch (error) {
          if (connectionGone(error)) return never();
          throw error;
        }
        if (abandoned()) throw new Abandoned();
        // Right before COMMIT, in the same round trip.
        mark = tx
          .unsafe(MARK)
          .execute()
          .then(readMark, () => null);
        phase = 'committing';
        return null;
      })
      .then(
        () => answer(() => resolve(value)),
        (error: unknown) => {
          // An abandoned call was already rejected; its rollback (or failure) is nobody's business.
          if (abandoned()) return;
          // The connection went with COMMIT in flight: it may have committed.
          if (phase === 'committing' && connectionGone(error)) return lookUp(error);
          answer(() => reject(toStoreError(error)));
        },
      );
  });
}
