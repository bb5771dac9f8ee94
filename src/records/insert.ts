// The one INSERT of decision records (migrations/0013, 0014, 0016): the writer's batches (./writer.ts) and
// a decision's own transaction (a redeem, a filing, a counted call: docs/operations.md "Decision
// records") write rows with it, so a record has the same columns whichever way it went.
import type { PendingQuery, Row, Sql, TransactionSql } from 'postgres';

/** Rows (rows.ts rowJsonOf) in one statement; a record written twice (a retry after a lost answer) is written once. */
export function insertRecords(sql: Sql | TransactionSql, rows: readonly string[]): PendingQuery<Row[]> {
  return sql`
    insert into decisions (id, decided_at, tool, user_sub, team, agent, roles, env, run_id, decision, rule, kind,
                           policies, approval_id, replayed, args, claims, context, run, stage)
    select id, 'epoch'::timestamptz + decided_us * interval '1 microsecond', tool, user_sub, team, agent, roles, env, run_id,
           decision, rule, kind, policies, approval_id, replayed, args, claims, context, run, stage
      from json_to_recordset(${`[${rows.join(',')}]`}::text::json) as r(id uuid, decided_us bigint, tool text, user_sub text,
           team text, agent text, roles json, env text, run_id text, decision text, rule text, kind text,
           policies json, approval_id text, replayed boolean, args json, claims json, context json, run json, stage text)
    on conflict do nothing`;
}

/**
 * One record's row, in the decision's transaction (`tx`, about to commit: the record commits with
 * what the decision did, or not at all). Any transaction that changes what a decision caused calls
 * this last, with the row the decision store made (DecisionWriter.rowOf).
 */
export async function insertRecord(tx: Sql | TransactionSql, row: string): Promise<void> {
  await insertRecords(tx, [row]);
}

// A `\u` escape of U+0000 or of a lone surrogate (JSON.stringify writes a well-formed pair as it is,
// so any surrogate escape is a lone one), not itself escaped: PostgreSQL refuses both as text, and
// a lone surrogate even as json.
const REFUSED_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f])/i;

/**
 * Whether PostgreSQL takes the row: one it would refuse must not share a transaction with what the
 * decision did (it would undo it), so it goes to the queue, which drops it alone (`rejected`).
 */
export function storableRow(row: string): boolean {
  return !REFUSED_ESCAPE.test(row);
}
