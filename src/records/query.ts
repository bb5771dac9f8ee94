// Reading the decision store: GET /decisions (keyset pages, newest first, as the approval lists:
// src/kernel/cursor.ts) and the CLI's `replay --from-db` and `cases --from-decision`.
import type { Sql } from 'postgres';
import { decodeCursor, encodeCursor } from '../kernel/cursor.js';
import { ListQueryError } from '../kernel/errors.js';
import { isUuid } from '../kernel/uuid.js';
import type { DecisionRecord } from '../policy/record.js';
import { type DecisionRow, recordOfRow } from './rows.js';

export interface DecisionQuery {
  tool?: string;
  decision?: string;
  user?: string;
  /** `args`: /decide's records only; a later stage: POST /inspect's of that stage. */
  stage?: string;
  since?: Date;
  until?: Date;
  cursor?: string;
  limit: number;
}

/** A stored record, with the run id its row keeps even without LOG_ARGS (the run view is kept only with it). */
export type StoredDecision = DecisionRecord & { readonly runId: string | null };

export interface DecisionPage {
  items: StoredDecision[];
  nextCursor: string | null;
}

function columns(sql: Sql) {
  return sql`id, to_char(decided_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at, tool, user_sub, team, agent,
             roles::text as roles, env, run_id, decision, rule, kind, policies::text as policies, approval_id, replayed,
             args::text as args, claims::text as claims, context::text as context, run::text as run, stage`;
}

function records(rows: readonly DecisionRow[]): StoredDecision[] {
  const out: StoredDecision[] = [];
  for (const row of rows) {
    const record = recordOfRow(row);
    // A row this service did not write the way it writes: not shown as a decision it cannot read.
    if (typeof record !== 'string') out.push({ ...record, runId: row.run_id });
  }
  return out;
}

/** One page, newest first; throws ListQueryError for a cursor this service did not issue, or one of the oldest-first approval lists. */
export async function listDecisions(sql: Sql, q: DecisionQuery): Promise<DecisionPage> {
  const after = q.cursor === undefined ? null : decodeCursor(q.cursor);
  if (after !== null && after.order !== 'newest')
    throw new ListQueryError('invalid_cursor', 'cursor', 'cursor is not one of this list');
  const rows = await sql<(DecisionRow & { at: string })[]>`
    select ${columns(sql)} from decisions
     where true
       ${q.tool === undefined ? sql`` : sql`and tool = ${q.tool}`}
       ${q.decision === undefined ? sql`` : sql`and decision = ${q.decision}`}
       ${q.user === undefined ? sql`` : sql`and user_sub = ${q.user}`}
       ${q.stage === undefined ? sql`` : q.stage === 'args' ? sql`and stage is null` : sql`and stage = ${q.stage}`}
       ${q.since === undefined ? sql`` : sql`and decided_at >= ${q.since.toISOString()}::timestamptz`}
       ${q.until === undefined ? sql`` : sql`and decided_at < ${q.until.toISOString()}::timestamptz`}
       ${after === null ? sql`` : sql`and (decided_at, id) < (${after.at}::text::timestamptz, ${after.id}::uuid)`}
     order by decided_at desc, id desc
     limit ${q.limit + 1}`;
  const page = rows.slice(0, q.limit);
  const last = page.at(-1);
  return {
    items: records(page),
    nextCursor: rows.length > q.limit && last !== undefined ? encodeCursor(last.at, last.id) : null,
  };
}

/** Every decision in [since, until), oldest first (replay reads them all). */
export async function allDecisions(
  sql: Sql,
  since: Date | undefined,
  until: Date | undefined,
): Promise<DecisionRecord[]> {
  const rows = await sql<DecisionRow[]>`
    select ${columns(sql)} from decisions
     where true
       ${since === undefined ? sql`` : sql`and decided_at >= ${since.toISOString()}::timestamptz`}
       ${until === undefined ? sql`` : sql`and decided_at < ${until.toISOString()}::timestamptz`}
     order by decided_at, id`;
  return records(rows);
}

/** The decision `id` (its first row: an Idempotency-Key retry's row has another id), or null. */
export async function decisionById(sql: Sql, id: string): Promise<DecisionRecord | null> {
  if (!isUuid(id)) return null;
  const rows = await sql<
    DecisionRow[]
  >`select ${columns(sql)} from decisions where id = ${id}::uuid and not replayed limit 1`;
  return records(rows)[0] ?? null;
}
