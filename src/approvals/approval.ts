// What an approval is, as the API and the page show it: its statuses, its two shapes (a summary for
// lists, the whole approval for one), its events, and the limits on what it may hold.
import type { JsonObject, JsonValue } from '../json/value.js';
import type { ApprovalRequirement, PolicyIdentity } from '../policy/model.js';

export type ApprovalStatus = 'pending' | 'granted' | 'denied' | 'expired' | 'consumed' | 'cancelled';
export const APPROVAL_STATUSES: readonly ApprovalStatus[] = [
  'pending',
  'granted',
  'denied',
  'expired',
  'consumed',
  'cancelled',
];

/** Limits the migration's CHECKs enforce; exported so the HTTP schemas can say the same. */
export const LIMITS = {
  /** A decision's note and message, the policy's reason (characters). */
  note: 2000,
  /** The search text of list() (characters). */
  search: 200,
  /** sub, team, agent, tool, kind, rule (characters). */
  name: 512,
  /** Page size of list(). */
  pageSize: 200,
  /** APPROVAL_MAX_BYTES' default: the canonical arguments an approval may hold (bytes of UTF-8). */
  argsBytes: 65_536,
} as const;

export interface Requester {
  sub: string;
  team: string | null;
  agent: string | null;
  /** The display name of the token (src/policy/claims.ts displayName): shown, never decided on. */
  name: string | null;
}

/** Who answers: the token's sub, team and roles (the eligibility of docs/spec.md section 2.4 reads them). */
export interface Approver {
  sub: string;
  /** Absent: none (a requirement that names teams, or separates by team, is not theirs to answer). */
  team?: string | null;
  /** Absent: none. Holding APPROVER_ROLE is the route's check; these are matched against `approvers.roles`. */
  roles?: readonly string[];
  /** A display name, when the identity carries one (stored with a grant); null otherwise. */
  name?: string | null;
}

/** One approver's grant of a pending approval (migrations/0019). */
export interface Grant {
  by: string;
  name: string | null;
  at: string;
  /** For the record: approvers only, as a decision's note. */
  note: string | null;
  /** The requirements (0-based, load order) it counted toward. */
  requirements: number[];
}

/**
 * What a list shows of an approval: everything but the arguments and the shapes picked from them,
 * which only GET /approvals/{id} reads (a page of 200 costs what its rows' names and times cost,
 * whatever the arguments weigh). `kind`, `reason` and `rule` are the first requirement's.
 */
export interface ApprovalSummary {
  id: string;
  /** `expired` as soon as a pending or granted approval is past expires_at (database clock). */
  status: ApprovalStatus;
  kind: string;
  hash: string;
  tool: string;
  reason: string;
  rule: string;
  requester: Requester;
  /** The run the request came from (`run.id`), when it said. */
  run_id: string | null;
  created_at: string;
  expires_at: string;
  decided_by: string | null;
  decided_at: string | null;
  /** The decision's note for the record: operators only (the API shows it to approvers). */
  decision_note: string | null;
  /** A denial's message for the agent: what the model is told when the requester cites it. */
  decision_message: string | null;
  consumed_at: string | null;
  /** Bytes of the canonical arguments. */
  args_bytes: number;
  /** Who amended the call when granting it (docs/spec.md section 5.4), and when; null when nobody did. */
  amended_by: string | null;
  amended_at: string | null;
}

/** The API shape of one approval, whole. */
export interface Approval extends ApprovalSummary {
  /** Parsed from the stored canonical text: number lexemes survive, so it re-hashes to `hash`. */
  args: JsonObject;
  /** The host's facts the request was decided under, when it had any (bound by the hash). */
  context?: JsonObject;
  /**
   * A tool's result held for review (POST /inspect), bound by the hash with the call; absent on an
   * approval of a call. A tool's output: label it so wherever it is shown.
   */
  result?: JsonValue;
  /** The first requirement's. */
  capability: JsonObject;
  /** The first requirement's. Model-chosen content: label it so wherever it is shown. */
  presentation: JsonObject;
  /** Every policy file that asked for this approval, in load order; the hash covers all of them. */
  requirements: ApprovalRequirement[];
  policies: PolicyIdentity[];
  /**
   * Who granted it since the last amendment (grants before one were for another call), oldest first:
   * one grant each; the last completes the quorum when it is granted.
   */
  grants: Grant[];
  /** The arguments an approver amended the call to (what the requester may run now), or null. */
  amended_args: JsonObject | null;
  /** The hash a redeem must match once amended: the amended call's (docs/spec.md section 5.4). */
  amended_hash: string | null;
  /**
   * What the amended call asks for, when the policy asks for approval of it (who may grant it and how
   * many); null when not amended, or when the policy allows the amended call (the filed ones apply).
   */
  amended_requirements: ApprovalRequirement[] | null;
}

export interface ApprovalEvent {
  id: number;
  approval_id: string;
  at: string;
  /** The sub that acted, or `system` for expiry. */
  actor: string;
  /** null for the creation event. */
  from_status: ApprovalStatus | null;
  to_status: ApprovalStatus;
  note: string | null;
  /** A denial's message for the agent (null otherwise, and on events written before there was one). */
  message: string | null;
}
