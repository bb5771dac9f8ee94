// A decision log line's fields (src/http/routes/decide.ts) as a row of the decision store, and a row
// back as the DecisionRecord replay and cases read (src/policy/record.ts), through the same
// validation as a log line read from a file.
import { parseJson } from '../json/parse.js';
import type { DecisionRecord } from '../policy/record.js';
import { recordFromLogLine } from '../policy/record.js';

/** One record as queued: the log line's fields and when it was decided. */
export interface QueuedDecision {
  /** Milliseconds since the epoch, with a fraction (to the microsecond): records of one millisecond keep their order. */
  readonly at: number;
  readonly fields: Readonly<Record<string, unknown>>;
}

/** The row as the batch insert's JSON (json_to_recordset) takes it. */
export function rowOf(q: QueuedDecision): Record<string, unknown> {
  const f = q.fields;
  const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  return {
    id: f.decision_id,
    decided_at: isoMicros(q.at),
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
  };
}

/** An instant in ms (with a fraction) as RFC 3339 to the microsecond. */
export function isoMicros(ms: number): string {
  const whole = Math.floor(ms);
  const micros = Math.min(999, Math.floor((ms - whole) * 1000));
  return `${new Date(whole).toISOString().slice(0, -1)}${String(micros).padStart(3, '0')}Z`;
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
  };
  const record = recordFromLogLine(line);
  return record ?? 'not a decision';
}
