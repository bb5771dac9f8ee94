// A recorded decision, as the decision log line writes it (docs/operations.md "Logs") and the decision
// store keeps it: what was asked, by whom, where, and what was answered by which policy set. Replay
// and `gatehouse cases` decide it again; only a record with its arguments can be (LOG_ARGS).
import type { JsonObject } from '../json/value.js';
import { isJsonObject } from '../json/value.js';
import { createStrictAjv } from './ajv.js';
import type { Decision, DecideRequest, Identity, RunView } from './model.js';
import { runViewSchema, toolNameSchema } from './request.js';

export interface DecisionRecord {
  readonly id: string;
  /** ISO 8601, when the record has a time. */
  readonly time: string | null;
  readonly tool: string;
  /** The environment that decided; undefined when the record does not say (a line from before it was logged). */
  readonly env: string | null | undefined;
  readonly identity: Identity;
  /** Absent: recorded without arguments (LOG_ARGS off), so it cannot be decided again. */
  readonly args?: JsonObject;
  readonly context?: JsonObject;
  readonly run?: RunView;
  readonly decision: Decision;
  readonly rule: string;
  /** A require_approval's approval kind, when recorded. */
  readonly kind?: string;
  /** The digests of the files of the set that decided, in load order. */
  readonly digests: readonly string[];
  /** Set when the request redeemed (or tried to redeem) an approval: the answer was the redeem's, not decide()'s alone. */
  readonly approvalId?: string;
  /** Set on an Idempotency-Key retry's line: the answer of an earlier decision, sent again. */
  readonly repeated?: boolean;
  /**
   * What POST /inspect inspected (docs/spec.md section 5.11); absent for /decide's records (`args`).
   * Such a record is not a call's decision: replay and cases skip it.
   */
  readonly stage?: RecordedStage;
}

/** The stages a record names; `args` (a /decide call) is never written: it is the default. */
export const RECORDED_STAGES = ['result', 'llm_request', 'llm_response'] as const;
export type RecordedStage = (typeof RECORDED_STAGES)[number];

const DECISIONS = ['allow', 'deny', 'abort', 'require_approval'] as const;
const nullableText = { type: ['string', 'null'] } as const;

const logLineSchema = {
  type: 'object',
  required: ['decision_id', 'tool', 'decision', 'rule', 'policies', 'user'],
  properties: {
    decision_id: { type: 'string', minLength: 1 },
    time: { type: ['number', 'string'] },
    tool: toolNameSchema,
    decision: { enum: DECISIONS },
    rule: { type: 'string' },
    kind: { type: 'string' },
    policies: { type: 'array', items: { type: 'string' } },
    user: { type: 'string' },
    team: nullableText,
    agent: nullableText,
    roles: { type: 'array', items: { type: 'string' } },
    env: nullableText,
    args: { type: 'object' },
    claims: { type: 'object' },
    context: { type: 'object' },
    run: runViewSchema,
    approval_id: { type: 'string' },
    replayed: { type: 'boolean' },
    stage: { enum: RECORDED_STAGES },
  },
} as const;
const validateLogLine = createStrictAjv(false).compile(logLineSchema);

/**
 * A decision's log line, as /decide writes it (src/engine/record.ts, built once) and the decision
 * store keeps it (src/records/rows.ts); the members after `replayed` are the log's alone.
 */
export interface DecisionLine {
  decision_id: string;
  time?: number | string;
  tool: string;
  decision: Decision;
  rule: string;
  kind?: string;
  policies: readonly string[];
  user: string;
  team?: string | null;
  agent?: string | null;
  roles?: readonly string[];
  env?: string | null;
  args?: JsonObject;
  claims?: JsonObject;
  context?: JsonObject;
  run?: RunView;
  approval_id?: string;
  replayed?: boolean;
  /** POST /inspect's stage; absent on /decide's lines. For a model stage `tool` is the stage's name. */
  stage?: RecordedStage;
  run_id?: string;
  duration_us?: number;
  replayed_decision_id?: string;
  /** Each limit of a counted call: whether the call counted in it, and its counter (null: undecidable). */
  budgets?: readonly { id: string; counted: boolean; standing: string | null }[];
}

/**
 * A decision log line (one parsed JSON line) as a record; `null` for a line that is not a decision's
 * (`"msg"` other than `decision`); a string saying what is wrong for a decision line that is not one.
 */
export function recordFromLogLine(line: unknown): DecisionRecord | string | null {
  if (!isJsonObject(line) || line.msg !== 'decision') return null;
  if (!validateLogLine(line)) {
    const e = validateLogLine.errors?.[0];
    return `not a decision log line: ${e?.instancePath || '/'} ${e?.message ?? 'is invalid'}`;
  }
  const l = line as unknown as DecisionLine;
  const time = typeof l.time === 'number' ? new Date(l.time).toISOString() : (l.time ?? null);
  return {
    id: l.decision_id,
    time,
    tool: l.tool,
    env: Object.hasOwn(l, 'env') ? (l.env ?? null) : undefined,
    identity: {
      user: l.user,
      team: l.team ?? null,
      agent: l.agent ?? null,
      roles: [...(l.roles ?? [])],
      ...(l.claims !== undefined ? { claims: l.claims } : {}),
    },
    ...(l.args !== undefined ? { args: l.args } : {}),
    ...(l.context !== undefined ? { context: l.context } : {}),
    ...(l.run !== undefined ? { run: l.run } : {}),
    decision: l.decision,
    rule: l.rule,
    ...(l.kind !== undefined ? { kind: l.kind } : {}),
    digests: [...l.policies],
    ...(l.approval_id !== undefined ? { approvalId: l.approval_id } : {}),
    ...(l.replayed === true ? { repeated: true } : {}),
    ...(l.stage !== undefined ? { stage: l.stage } : {}),
  };
}

/** The request decide() takes for a record with its arguments. */
export function recordRequest(record: DecisionRecord & { args: JsonObject }): DecideRequest {
  return {
    tool: record.tool,
    args: record.args,
    ...(record.run !== undefined ? { run: record.run } : {}),
    ...(record.context !== undefined ? { context: record.context } : {}),
  };
}

/**
 * A policy test case (`*.test.yaml`, docs/policies.md "Testing policies") of a record with its
 * arguments: the request as it was decided, `want` the recorded decision (or `want`, for a
 * regression being fixed: then without the recorded rule and kind, which were the old answer's).
 * The caller's claims are the recorded ones with the identity the service read from them (sub,
 * team, agent, roles) written under the names a test case reads.
 */
export function recordCase(record: DecisionRecord & { args: JsonObject }, want?: Decision): JsonObject {
  const { identity } = record;
  const { team: _team, agent: _agent, ...others } = identity.claims ?? {};
  const claims: JsonObject = {
    ...others,
    sub: identity.user,
    ...(identity.team !== null ? { team: identity.team } : {}),
    ...(identity.agent !== null ? { agent: identity.agent } : {}),
    roles: [...identity.roles],
  };
  const kept = want === undefined || want === record.decision;
  return {
    name: `decision ${record.id}: ${record.tool} by ${identity.user}${kept ? '' : ` (recorded ${record.decision})`}`,
    tool: record.tool,
    args: record.args,
    claims,
    ...(typeof record.env === 'string' ? { env: record.env } : {}),
    ...(record.run !== undefined ? { run: record.run as unknown as JsonObject } : {}), // a run view is JSON data
    ...(record.context !== undefined ? { context: record.context } : {}),
    want: want ?? record.decision,
    ...(kept ? { rule: record.rule } : {}),
    ...(kept && record.kind !== undefined ? { kind: record.kind } : {}),
  };
}
