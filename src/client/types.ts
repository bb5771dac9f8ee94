// What the client sends and reads: the shapes of docs/spec.md section 5 (openapi.yaml is the full
// schema), with camelCase names. The wire's snake_case names are converted in one place, ./wire.ts,
// whose field tables are checked against these types (by the compiler) and against openapi.yaml (by
// test/client/contract.test.ts). Values inside `args`, `context`, `capability` and `presentation`
// are data, never renamed.

export type DecisionKind = 'allow' | 'deny' | 'abort' | 'require_approval';
export type ApprovalStatus = 'pending' | 'granted' | 'denied' | 'expired' | 'consumed' | 'cancelled';

/** What every method takes as its last argument (some add their own options to it). */
export interface RequestOptions {
  /** Aborting it abandons the request; the method rejects with the signal's reason. */
  signal?: AbortSignal;
  /** This request's timeout, instead of the client's `timeoutMs` (a long-poll adds the time it holds). */
  timeoutMs?: number;
}

/** Options of the requests that take an `Idempotency-Key` (spec section 5.3). */
export interface IdempotentOptions extends RequestOptions {
  /** 1–255 visible ASCII characters: a retry under the same key is not acted on twice. */
  idempotencyKey?: string;
}

export interface RunStep {
  tool: string;
  decision?: DecisionKind;
  approvalId?: string;
}

export interface RunApproval {
  id: string;
  kind?: string;
  status?: ApprovalStatus;
  /** The tool the approval was for (read by `$run.approvals.N.tool` and `count($run.approvals, …)`). */
  tool?: string;
}

/** The run view the host's runtime records (spec section 5.3): the host's word, never the model's. */
export interface RunView {
  id?: string;
  steps?: RunStep[];
  approvals?: RunApproval[];
}

/** A tool call as the tool will execute it: parsed arguments, never the model's raw JSON text. */
export interface ToolCall {
  tool: string;
  args?: Record<string, unknown>;
  run?: RunView;
  context?: Record<string, unknown>;
}

/**
 * A filing (POST /approvals): a call, and, from a runtime holding RUNTIME_ROLE, the approval it asks
 * for a call a crash interrupted (spec section 5.4.2): filed without a decision.
 */
export interface ApprovalFiling extends ToolCall {
  kind?: 'interrupted_side_effect';
}

/** A call to POST /decide: with `approvalId`, it redeems that approval (spec section 5.3). */
export interface DecideCall extends ToolCall {
  approvalId?: string;
}

export interface PolicyIdentity {
  policy: string;
  version?: string;
  digest: string;
}

/** A budget's or rate limit's counter in its current window (spec section 2.9). */
export interface LimitCounter {
  counted?: number;
  calls?: number;
  windowStart: string;
  windowEnd: string;
  freesAt?: string;
}

/** One policy file's reason for asking for an approval. */
export interface ApprovalRequirement {
  policy: string;
  rule: string;
  kind: string;
  reason: string;
  capability: Record<string, unknown>;
  presentation: Record<string, unknown>;
  standing?: LimitCounter;
}

/** What an approval of the call is about; `id` and `status` when a stored approval was cited. */
export interface ApprovalDescriptor {
  requirements: ApprovalRequirement[];
  kind: string;
  capability: Record<string, unknown>;
  presentation: Record<string, unknown>;
  hash: string;
  id?: string;
  status?: ApprovalStatus;
}

/** How to resume a require_approval (spec section 5.3, "What to do next"). */
export interface NextStep {
  action: 'file' | 'wait' | 'file_new';
  url: string;
  expiresAt?: string;
}

export interface DecisionBody {
  decision: DecisionKind;
  reason: string;
  rule: string;
  policies: PolicyIdentity[];
  approval?: ApprovalDescriptor;
  message: string;
  decisionId: string;
  next?: NextStep;
}

export interface Requester {
  sub: string;
  team: string | null;
  agent: string | null;
  /** The token's display name (`name`, `preferred_username` or `email`); null without one. */
  name: string | null;
}

/** An approval as lists show it: everything but its arguments and what was picked from them. */
export interface ApprovalSummary {
  id: string;
  status: ApprovalStatus;
  kind: string;
  hash: string;
  tool: string;
  reason: string;
  rule: string;
  requester: Requester;
  runId: string | null;
  createdAt: string;
  expiresAt: string;
  decidedBy: string | null;
  decidedAt: string | null;
  /** For the record: shown to approvers only (null for anyone else). */
  decisionNote: string | null;
  /** A denial's message for the agent. */
  decisionMessage: string | null;
  consumedAt: string | null;
  argsBytes: number;
}

/** One approval whole (GET /approvals/{id}, filing, and the transitions). */
export interface Approval extends ApprovalSummary {
  args: Record<string, unknown>;
  /** The request's context, when it had a non-empty one. */
  context?: Record<string, unknown>;
  capability: Record<string, unknown>;
  presentation: Record<string, unknown>;
  requirements: ApprovalRequirement[];
  policies: PolicyIdentity[];
  presentationLabel: string;
  /** GET /approvals/{id} only: the amounts the serving catalogue annotates, for display (spec section 2.2). */
  money?: MoneyField[];
}

/** A money field of a tool's arguments: its path, and its currency or the path of the argument holding it. */
export interface MoneyField {
  path: string;
  currency?: string;
  currencyPath?: string;
}

/** GET /approvals: its filters (spec section 5.4), each the query parameter of the same name. */
export interface ListQuery {
  status?: ApprovalStatus;
  tool?: string;
  kind?: string;
  /** The requester's `sub`. */
  requester?: string;
  /** Text searched for, case-insensitively (at most 200 characters). */
  q?: string;
  /** `true`: only approvals an operator decided (the history). */
  decided?: boolean;
  order?: 'newest' | 'oldest';
  /** `true`: the page also says how many approvals the filters match (`count`). */
  count?: boolean;
  limit?: number;
  cursor?: string;
}

export interface ApprovalPage {
  items: ApprovalSummary[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
  /** With `count: true`. */
  count?: number;
}

/** The texts of a grant (spec section 5.4): the note, for the record. */
export interface GrantTexts {
  note?: string;
}

/** The texts of a denial (spec section 5.4): the note for the record, the message for the agent. */
export interface DenyTexts {
  /** For the record (`decisionNote`): shown to approvers only, never to the requester or the model. */
  note?: string;
  /** For the agent (`decisionMessage`): what the model is told when the requester cites the approval. */
  message?: string;
}

export type ToolStatus = 'allow' | 'require_approval' | 'deny' | 'abort' | 'depends';

export interface ToolEntry {
  name: string;
  policy: string;
  kind: 'read_only' | 'local_mutation' | 'remote_mutation' | 'destructive';
  tags: string[];
  status: ToolStatus;
  rules: string[];
}

/** GET /tools: every catalogued tool (exact names and globs) and what the caller would get. */
export interface ToolsResponse {
  /** The active environment (POLICY_ENV), or null when none is set. */
  env: string | null;
  tools: ToolEntry[];
}
