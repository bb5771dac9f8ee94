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
  /** With `result`: the review of a tool's result (the /inspect body of the result stage), never with `kind`. */
  stage?: 'result';
  /** The tool's result to be reviewed: data, never renamed. */
  result?: unknown;
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
  /** Who may answer it besides holding the approver role (every list given must match): only when the policy narrows it. */
  approvers?: ApproverLists;
  /** How many distinct eligible approvers must grant it: only when more than 1. */
  quorum?: number;
  /** `team`: no approver of the requester's team may answer it. */
  separateFromRequester?: 'team';
}

export interface ApproverLists {
  roles?: string[];
  teams?: string[];
  users?: string[];
}

/** A requirement as a stored approval shows it: who may answer, how many must, and who has. */
export interface ApprovalRequirementState
  extends Omit<ApprovalRequirement, 'approvers' | 'quorum' | 'separateFromRequester'> {
  /** null: any holder of the approver role. */
  approvers: ApproverLists | null;
  quorum: number;
  separateFromRequester: 'none' | 'team';
  /** The `sub`s whose grants counted toward it, oldest first. */
  granted: string[];
}

/** One approver's grant of an approval (spec section 5.4). */
export interface Grant {
  by: string;
  name: string | null;
  at: string;
  /** For the record: shown to approvers only (null for anyone else). */
  note: string | null;
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
  /** `use_amended` (on a deny): an operator granted the call amended; run `args` instead (spec section 5.4). */
  action: 'file' | 'wait' | 'file_new' | 'use_amended';
  url: string;
  expiresAt?: string;
  /** With `use_amended`: the approval granted for the amended call. */
  approvalId?: string;
  /** With `use_amended`: the amended arguments (data, never renamed). */
  args?: Record<string, unknown>;
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
  /** Who amended the call when granting it (spec section 5.4, "Amend and grant"), and when; null when nobody did. */
  amendedBy: string | null;
  amendedAt: string | null;
}

/** One approval whole (GET /approvals/{id}, filing, and the transitions). */
export interface Approval extends ApprovalSummary {
  args: Record<string, unknown>;
  /** The request's context, when it had a non-empty one. */
  context?: Record<string, unknown>;
  capability: Record<string, unknown>;
  presentation: Record<string, unknown>;
  requirements: ApprovalRequirementState[];
  /** Who granted it so far, oldest first (a quorum needs several). */
  grants: Grant[];
  policies: PolicyIdentity[];
  presentationLabel: string;
  /** The review of a tool's result: the result (data, never renamed); absent on an approval of a call. */
  result?: unknown;
  /** With `result`: how to label it wherever it is shown. */
  resultLabel?: string;
  /** GET /approvals/{id} only: the amounts the serving catalogue annotates, for display (spec section 2.2). */
  money?: MoneyField[];
  /** GET /approvals/{id}, approvers only: the tool's argument schema from the serving catalogue (data, never renamed). */
  argsSchema?: unknown;
  /** The arguments an operator amended the call to when granting it: once set, only these redeem it. */
  amendedArgs: Record<string, unknown> | null;
  /** The amended call's approval hash, which its redeem matches; null when not amended. */
  amendedHash: string | null;
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
  /** `true`: only the pending approvals the caller may answer and has not granted (an approver's queue). */
  eligible?: boolean;
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
  /** The call amended: grant these arguments instead (spec section 5.4, "Amend and grant"). */
  args?: Record<string, unknown>;
}

/** The texts of a denial (spec section 5.4): the note for the record, the message for the agent. */
export interface DenyTexts {
  /** For the record (`decisionNote`): shown to approvers only, never to the requester or the model. */
  note?: string;
  /** For the agent (`decisionMessage`): what the model is told when the requester cites the approval. */
  message?: string;
}

// ---- after the call: POST /inspect (spec section 2.5.1) ------------------------------------------------

export type InspectDecision = 'allow' | 'deny' | 'require_approval';

/**
 * A tool's result, with the call that produced it (an approval of a result binds both). With
 * `approvalId`, it redeems that approval of this very result (once).
 */
export interface ResultInspection {
  stage: 'result';
  tool: string;
  args?: Record<string, unknown>;
  /** What the tool returned, as JSON: data, never renamed. */
  result: unknown;
  run?: RunView;
  context?: Record<string, unknown>;
  approvalId?: string;
}

/** What the agent sends its model (`llm_request`) or the model answers (`llm_response`), as JSON. */
export interface ModelInspection {
  stage: 'llm_request' | 'llm_response';
  content: unknown;
  run?: RunView;
  context?: Record<string, unknown>;
}

export type InspectRequest = ResultInspection | ModelInspection;

/** One finding of a `redact` guard: `path` with keys no schema declares written `*`. */
export interface InspectFinding {
  /** The guard's id. */
  guard: string;
  /** `email`, `card`…, a credential's format (`github_token`…), or a pattern's name. */
  type: string;
  path: string;
  /** The finding is in an object key (`path` is then the object's). */
  inKey?: true;
}

/** The answer of POST /inspect: 200 allow, 403 deny or require_approval. */
export interface InspectBody {
  decision: InspectDecision;
  stage: 'result' | 'llm_request' | 'llm_response';
  reason: string;
  rule: string;
  policies: PolicyIdentity[];
  /** For the model: what was withheld and why, never the value. */
  message: string;
  decisionId: string;
  /**
   * The value with every redact guard's findings replaced (`[REDACTED:<type>]`): hand this on instead
   * of the value. Present only when a redact guard found something. Data, never renamed.
   */
  redacted?: unknown;
  findings?: InspectFinding[];
  /** On require_approval: the approval of this result (its hash covers the call and the result). */
  approval?: ApprovalDescriptor;
  next?: NextStep;
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

// ---- the lists of decisions and of budgets ------------------------------------------------------------

/** GET /decisions: its filters (spec section 5.9), each the query parameter of the same name. */
export interface DecisionQuery {
  tool?: string;
  decision?: DecisionKind;
  /** The caller's `sub`. */
  user?: string;
  /** An RFC 3339 date-time (`2026-12-02T05:17:03Z`; a Date's `toISOString()`): from then on, inclusive. */
  since?: string;
  /** An RFC 3339 date-time: before then, exclusive. */
  until?: string;
  /** 1–200, default 50. */
  limit?: number;
  cursor?: string;
}

/** One recorded decision, as the decision store keeps it (spec section 5.9). */
export interface DecisionRecord {
  decisionId: string;
  time: string;
  tool: string;
  decision: DecisionKind;
  rule: string;
  /** A require_approval's approval kind. */
  kind?: string;
  /** The digests of the files of the set that decided. */
  policies: string[];
  user: string;
  team: string | null;
  agent: string | null;
  roles: string[];
  env: string | null;
  runId: string | null;
  approvalId?: string;
  /** An Idempotency-Key retry's answer. */
  replayed?: boolean;
  /** With LOG_ARGS only, and these four as recorded (the caller's data, in the wire's names), secret-named keys redacted. */
  args?: Record<string, unknown>;
  claims?: Record<string, unknown>;
  context?: Record<string, unknown>;
  run?: Record<string, unknown>;
}

export interface DecisionPage {
  items: DecisionRecord[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/** GET /budgets: with ADMIN_ROLE, the most counters shown per limit (1–1000, default 100). */
export interface BudgetsQuery {
  limit?: number;
}

export type LimitScope = 'user' | 'team' | 'agent' | 'run' | 'global';

/** Whose counter it is (`{}` for a global one). */
export interface CounterOwner {
  user?: string;
  team?: string;
  agent?: string;
  run?: string;
}

export interface LimitStanding extends LimitCounter {
  for: CounterOwner;
}

/** A budget or a rate limit that can apply to the caller, and its counters in the current window. */
export interface LimitEntry {
  id: string;
  type: 'budget' | 'rate_limit';
  policy: string;
  scope: LimitScope;
  onExceed: 'deny' | 'require_approval' | 'abort';
  /** A budget's measure: the `sum` of an argument, 1 per call, or reported spend (`usd`). */
  counts?: 'sum' | 'calls' | 'usd';
  /** The argument summed. */
  sum?: string;
  max?: number;
  maxUsd?: number;
  /** A rate limit's calls per `per`. */
  calls?: number;
  /** A calendar unit (budgets), or a duration as written (seconds, or `90s`, `15m`, `2h`, `7d`). */
  per: string | number;
  tools?: string[];
  kinds?: string[];
  tags?: string[];
  envs?: string[];
  counters: LimitStanding[];
  /** `false`: the caller lacks what the scope needs (a team, an agent): every call the limit selects is refused. */
  countable?: false;
  /** With ADMIN_ROLE: whether there are more counters than shown. */
  more?: boolean;
}

/** GET /budgets: where the caller stands in every budget and rate limit that can apply to it. */
export interface BudgetsResponse {
  /** The active environment (POLICY_ENV), or null when none is set. */
  env: string | null;
  limits: LimitEntry[];
}
