// Rows of the approvals table as the store reads them, and the approvals they are. The stored
// forms of an approval's requirements (migrations/0005) are written and read here.
import { isDefaultShape } from '../json/canonical.js';
import { parseJson } from '../json/parse.js';
import { isJsonObject } from '../json/value.js';
import type { JsonObject, JsonValue } from '../json/value.js';
import type { ApprovalRequirement, PolicyIdentity } from '../policy/model.js';
import type { Approval, ApprovalStatus, ApprovalSummary } from './approval.js';

// A row as SELECTed with summaryColumns. `lapsed`: live but past expires_at by the database clock.
export interface SummaryRow {
  id: string;
  status: ApprovalStatus;
  hash: string;
  kind: string;
  tool: string;
  reason: string;
  rule: string;
  requester_sub: string;
  requester_team: string | null;
  requester_agent: string | null;
  requester_name: string | null;
  run_id: string | null;
  created_at: Date;
  expires_at: Date;
  decided_by: string | null;
  decided_at: Date | null;
  decision_note: string | null;
  decision_message: string | null;
  consumed_at: Date | null;
  args_bytes: number;
  lapsed: boolean;
  /** undefined before migrations/0021. */
  amended_by?: string | null;
  amended_at?: Date | null;
}

// A row as SELECTed with liveColumns: all of it.
export interface ApprovalRow extends SummaryRow {
  args: string;
  /** Canonical JSON of the request's context; null without one (and in rows from before migrations/0006). */
  context: string | null;
  /** null when `requirements` holds the shapes (every row written since migrations/0005). */
  capability: string | null;
  presentation: string | null;
  /** Canonical JSON array of StoredRequirement; null in rows written before migrations/0005 (undefined on a database before it). */
  requirements: string | null;
  /** Canonical JSON of a result held for review (migrations/0017); null for a call's approval (undefined before 0017). */
  result?: string | null;
  policies: PolicyIdentity[];
  /** With grantsColumn (store.ts): the grants, oldest first; absent where it was not selected (none yet). */
  grants?: GrantRow[];
  /** An amendment (migrations/0021): canonical JSON texts and the hash; undefined before it. */
  amended_args?: string | null;
  amended_hash?: string | null;
  amended_requirements?: string | null;
  grant_round?: number;
}

/** A grant as grantsColumn aggregates it (json: `at` is a timestamp's text). */
export interface GrantRow {
  by: string;
  name: string | null;
  at: string;
  note: string | null;
  requirements: number[];
}

export interface ListedRow extends SummaryRow {
  cursor_at: string;
}

export interface EventRow {
  id: string; // bigint arrives as a string
  approval_id: string;
  at: Date;
  actor: string;
  from_status: ApprovalStatus | null;
  to_status: ApprovalStatus;
  note: string | null;
  message: string | null;
}

export function toSummary(row: SummaryRow): ApprovalSummary {
  return {
    id: row.id,
    status: row.lapsed ? 'expired' : row.status,
    kind: row.kind,
    hash: row.hash,
    tool: row.tool,
    reason: row.reason,
    rule: row.rule,
    requester: {
      sub: row.requester_sub,
      team: row.requester_team,
      agent: row.requester_agent,
      name: row.requester_name ?? null, // undefined before migrations/0020
    },
    run_id: row.run_id ?? null, // undefined before migrations/0007
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at.toISOString(),
    decided_by: row.decided_by,
    decided_at: row.decided_at?.toISOString() ?? null,
    decision_note: row.decision_note,
    decision_message: row.decision_message,
    consumed_at: row.consumed_at?.toISOString() ?? null,
    args_bytes: row.args_bytes,
    amended_by: row.amended_by ?? null,
    amended_at: row.amended_at?.toISOString() ?? null,
  };
}

export function toApproval(row: ApprovalRow): Approval {
  const args = storedObject(row.args);
  const requirements =
    row.requirements != null ? storedRequirements(row.requirements, row.tool, args) : [legacyRequirement(row)];
  const first = requirements[0]!; // storedRequirements refuses an empty list
  return {
    ...toSummary(row),
    args,
    ...(row.context == null ? {} : { context: storedObject(row.context) }), // undefined before migrations/0006
    ...(row.result == null ? {} : { result: parseJson(row.result) }),
    capability: first.capability,
    presentation: first.presentation,
    requirements,
    policies: row.policies,
    grants: (row.grants ?? []).map((g) => ({
      by: g.by,
      name: g.name,
      at: new Date(g.at).toISOString(),
      note: g.note,
      requirements: g.requirements,
    })),
    ...amendmentOf(row),
  };
}

/** An approval's amendment, read with the amended arguments (its requirements' default shapes are theirs). */
function amendmentOf(row: ApprovalRow): Pick<Approval, 'amended_args' | 'amended_hash' | 'amended_requirements'> {
  if (row.amended_args == null || row.amended_hash == null)
    return { amended_args: null, amended_hash: null, amended_requirements: null };
  const args = storedObject(row.amended_args);
  return {
    amended_args: args,
    amended_hash: row.amended_hash,
    amended_requirements:
      row.amended_requirements == null ? null : storedRequirements(row.amended_requirements, row.tool, args),
  };
}

/**
 * A requirement as stored (migrations/0005): a shape that is the default {tool, args} is left out,
 * so the arguments are stored once, in `args`.
 */
export function storedRequirement(r: ApprovalRequirement, tool: string, args: JsonObject): JsonObject {
  const out: JsonObject = { kind: r.kind, policy: r.policy, reason: r.reason, rule: r.rule };
  if (!isDefaultShape(r.capability, tool, args)) out.capability = r.capability;
  if (!isDefaultShape(r.presentation, tool, args)) out.presentation = r.presentation;
  // A budget's or rate limit's standing when it asked: shown to the operator, not hashed.
  if (r.standing !== undefined) out.standing = r.standing;
  // Who may answer and how many: hashed, and read by the store's eligibility (store.ts).
  if (r.approvers !== undefined) out.approvers = r.approvers as JsonObject;
  if (r.quorum !== undefined) out.quorum = r.quorum;
  if (r.separate_from_requester !== undefined) out.separate_from_requester = r.separate_from_requester;
  return out;
}

function storedRequirements(text: string, tool: string, args: JsonObject): ApprovalRequirement[] {
  const list = parseJson(text);
  if (!Array.isArray(list) || list.length === 0)
    throw new Error('stored approval requirements are not a non-empty array');
  return list.map((item: JsonValue): ApprovalRequirement => {
    if (!isJsonObject(item)) throw new Error('a stored approval requirement is not an object');
    const { kind, policy, reason, rule, capability, presentation, standing } = item;
    const { approvers, quorum, separate_from_requester: separation } = item;
    if (
      typeof kind !== 'string' ||
      typeof policy !== 'string' ||
      typeof reason !== 'string' ||
      typeof rule !== 'string'
    ) {
      throw new Error('a stored approval requirement lacks its names');
    }
    const shape = (v: JsonValue | undefined): JsonObject => {
      if (v === undefined) return { tool, args };
      if (!isJsonObject(v)) throw new Error('a stored approval shape is not an object');
      return v;
    };
    if (standing !== undefined && !isJsonObject(standing)) throw new Error('a stored standing is not an object');
    if (approvers !== undefined && !isApproverLists(approvers))
      throw new Error('stored approvers are not lists of names');
    if (quorum !== undefined && !(Number.isInteger(quorum) && (quorum as number) >= 2 && (quorum as number) <= 5))
      throw new Error('a stored quorum is not 2..5');
    if (separation !== undefined && separation !== 'team') throw new Error('a stored separation is not `team`');
    return {
      policy,
      rule,
      kind,
      reason,
      capability: shape(capability),
      presentation: shape(presentation),
      ...(standing !== undefined ? { standing } : {}),
      ...(approvers !== undefined ? { approvers } : {}),
      ...(quorum !== undefined ? { quorum: quorum as number } : {}),
      ...(separation !== undefined ? { separate_from_requester: 'team' as const } : {}),
    };
  });
}

function isApproverLists(v: JsonValue): v is { roles?: string[]; teams?: string[]; users?: string[] } {
  if (!isJsonObject(v)) return false;
  return Object.entries(v).every(
    ([k, list]) =>
      (k === 'roles' || k === 'teams' || k === 'users') &&
      Array.isArray(list) &&
      list.length > 0 &&
      list.every((x) => typeof x === 'string'),
  );
}

/** The one requirement of a row written before migrations/0005, from its own columns. */
function legacyRequirement(row: ApprovalRow): ApprovalRequirement {
  if (row.capability === null || row.presentation === null)
    throw new Error('stored approval has neither requirements nor shapes');
  return {
    // Such a row did not record which file asked; with one file there is no doubt.
    policy: row.policies.length === 1 ? row.policies[0]!.policy : '',
    rule: row.rule,
    kind: row.kind,
    reason: row.reason,
    capability: storedObject(row.capability),
    presentation: storedObject(row.presentation),
  };
}

function storedObject(text: string): JsonObject {
  const value = parseJson(text);
  if (!isJsonObject(value)) throw new Error('stored approval JSON is not an object');
  return value;
}
