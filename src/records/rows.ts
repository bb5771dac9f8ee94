// A decision's record (src/engine/record.ts) as a row of the decision store, and a row
// back as the DecisionRecord replay and cases read (src/policy/record.ts), through the same
// validation as a log line read from a file.
import { parseJson } from '../json/parse.js';
import type { DecisionLine, DecisionRecord } from '../policy/record.js';
import { recordFromLogLine } from '../policy/record.js';

const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/**
 * A decision log line's fields, decided at `at` (ms since the epoch, with a fraction: to the
 * microsecond, so records of one millisecond keep their order), as one row of the batch insert's
 * JSON (json_to_recordset). Serialized when queued, so the queue holds one string per record, not
 * the request's object graph: a graph kept for a batch's linger outlives the young generation.
 */
export function rowJsonOf(at: number, f: DecisionLine): string {
  return JSON.stringify({
    id: f.decision_id,
    decided_us: Math.floor(at * 1000), // the insert makes it a timestamptz: Date and toISOString cost more than the rest of the row
    tool: f.tool,
    user_sub: f.user,
    team: text(f.team),
    agent: text(f.agent),
    roles: Array.isArray(f.roles) ? f.roles : [],
    env: text(f.env),
    run_id: text(f.run_id),
    decision: f.decision,
    rule: f.rule,
    kind: text(f.kind),
    policies: f.policies,
    approval_id: text(f.approval_id),
    replayed: f.replayed === true,
    args: f.args ?? null,
    claims: f.claims ?? null,
    context: f.context ?? null,
    run: f.run ?? null,
    stage: text(f.stage),
  });
}

/** The columns a read selects; the JSON ones as text, parsed by the strict parser (numbers keep their text). */
export interface DecisionRow {
  id: string;
  /** To the microsecond, UTC (the cursor's instant). */
  at: string;
  tool: string;
  user_sub: string;
  team: string | null;
  agent: string | null;
  roles: string;
  env: string | null;
  run_id: string | null;
  decision: string;
  rule: string;
  kind: string | null;
  policies: string;
  approval_id: string | null;
  replayed: boolean;
  args: string | null;
  claims: string | null;
  context: string | null;
  run: string | null;
  /** POST /inspect's stage; null for /decide's rows. */
  stage: string | null;
}

/** A stored row as a record; a string saying why not (a row another writer made wrong). */
export function recordOfRow(r: DecisionRow): DecisionRecord | string {
  const line: Record<string, unknown> = {
    msg: 'decision',
    decision_id: r.id,
    time: r.at,
    tool: r.tool,
    decision: r.decision,
    rule: r.rule,
    policies: parseJson(r.policies),
    user: r.user_sub,
    team: r.team,
    agent: r.agent,
    roles: parseJson(r.roles),
    env: r.env,
    ...(r.kind !== null ? { kind: r.kind } : {}),
    ...(r.approval_id !== null ? { approval_id: r.approval_id } : {}),
    ...(r.replayed ? { replayed: true } : {}),
    ...(r.args !== null ? { args: parseJson(r.args) } : {}),
    ...(r.claims !== null ? { claims: parseJson(r.claims) } : {}),
    ...(r.context !== null ? { context: parseJson(r.context) } : {}),
    ...(r.run !== null ? { run: parseJson(r.run) } : {}),
    ...(r.stage !== null ? { stage: r.stage } : {}),
  };
  const record = recordFromLogLine(line);
  return record ?? 'not a decision';
}
