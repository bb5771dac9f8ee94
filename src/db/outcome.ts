// Whether a transaction committed, when its COMMIT was sent and its answer never came: the connection
// closed (a restart after COMMIT reached the server), or the deadline ran out with COMMIT in flight
// (a dark link). A 503 promises that nothing committed (docs/spec.md section 5.1), so the outcome is
// looked up before anything is answered:
// - a transaction marks itself (MARK: its id, null while it wrote nothing, and its backend's pid),
//   read in the same round trip as its last statements;
// - another connection asks pg_xact_status (PostgreSQL 13+) for that id;
// - 'in progress' means its backend has not read our COMMIT yet (or not yet seen the closed socket):
//   ending that backend settles it (pg_terminate_backend waits for the exit, PostgreSQL 14+), and it
//   commits only if COMMIT was already being executed. Then the status is final.
// Where nothing can be learned in time (the database out of reach), the outcome is 'unknown' and the
// caller answers so (OutcomeUnknownError), never 503. Each transaction also gives the server a
// deadline for its COMMIT (IDLE_LIMIT): a COMMIT held up longer than that is refused by the server,
// so an unknown outcome is settled, one way or the other, soon after it was answered.
import type { Sql } from 'postgres';
import { unavailableFrom } from './errors.js';

export type CommitOutcome = 'committed' | 'aborted' | 'unknown';

/** What a transaction says of itself: its id (null when it wrote nothing) and its backend's pid. */
export interface TransactionMark {
  readonly xid: string | null;
  readonly pid: number;
}

export const MARK = 'select pg_current_xact_id_if_assigned()::text as xid, pg_backend_pid() as pid';

/** The server ends a transaction idle longer than `ms` (so a COMMIT that arrives later never commits). */
export const idleLimit = (ms: number): string =>
  `set local idle_in_transaction_session_timeout = ${Math.max(1, Math.ceil(ms))}`;

export function readMark(rows: readonly unknown[] | undefined): TransactionMark | null {
  const row = rows?.[0] as { xid?: unknown; pid?: unknown } | undefined;
  if (row === undefined || typeof row.pid !== 'number') return null;
  return { xid: typeof row.xid === 'string' ? row.xid : null, pid: row.pid };
}

/**
 * The outcome of the transaction `marked` names, asked on `sql` (not the transaction's connection),
 * within `ms` (waiting for the mark included). A transaction that wrote nothing lost nothing: its answer stands as if committed.
 */
export async function commitOutcome(
  sql: Sql,
  marked: Promise<TransactionMark | null>,
  ms: number,
): Promise<CommitOutcome> {
  let timer: NodeJS.Timeout | undefined;
  let over = false;
  const late = new Promise<'unknown'>((resolve) => {
    timer = setTimeout(() => {
      over = true;
      resolve('unknown');
    }, ms);
  });
  const once = async (mark: TransactionMark & { xid: string }): Promise<CommitOutcome> => {
    // backend_xid is the 32-bit form of the transaction id: it names the backend still inside it.
    const xid32 = String(BigInt(mark.xid) & 0xffff_ffffn);
    for (let attempt = 0; attempt < 3; attempt++) {
      const [row] = await sql<{ status: string | null }[]>`select pg_xact_status(${mark.xid}::xid8) as status`;
      if (row?.status === 'committed') return 'committed';
      if (row?.status === 'aborted') return 'aborted';
      if (row?.status !== 'in progress') return 'unknown'; // too old to know, or never seen: cannot happen here
      await sql`
        select pg_terminate_backend(pid, ${Math.max(1, Math.floor(ms))}::bigint)
        from pg_stat_activity where pid = ${mark.pid} and backend_xid = ${xid32}::xid`;
    }
    return 'unknown';
  };
  const ask = async (): Promise<CommitOutcome> => {
    // The mark's answer came before COMMIT's, or not at all (then nothing can be known).
    const mark = await marked;
    if (mark === null) return 'unknown';
    if (mark.xid === null) return 'committed';
    const { xid } = mark;
    // A server restarting, or a connection cut too, is asked again until the time is up.
    for (;;) {
      try {
        return await once({ ...mark, xid });
      } catch (error) {
        if (over || unavailableFrom(error) === null) return 'unknown';
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  };
  try {
    return await Promise.race([ask().catch((): CommitOutcome => 'unknown'), late]);
  } finally {
    clearTimeout(timer);
  }
}
