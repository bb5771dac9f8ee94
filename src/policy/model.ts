// The shapes the policy core works with: a compiled policy set, a request, an identity, a decision.
// Everything here is built once at load (see compile.ts, load.ts) and read by decide.ts.
import type { ValidateFunction } from 'ajv';
import type { JsonObject } from '../json/value.js';
import type { CompiledCondition } from './condition/compile.js';
import type { Glob } from './glob.js';
import type { GuardDetector, GuardName } from './guards.js';
import type { MoneyField } from './money.js';

/** The four answers, from least to most severe (docs/spec.md section 1). */
export type Decision = 'allow' | 'require_approval' | 'deny' | 'abort';
export const SEVERITY: Readonly<Record<Decision, number>> = { allow: 0, require_approval: 1, deny: 2, abort: 3 };

export type ToolKind = 'read_only' | 'local_mutation' | 'remote_mutation' | 'destructive';
/** `unknown` is the kind of a tool that no catalogue names. */
export type EffectiveKind = ToolKind | 'unknown';
export type DefaultMode = 'allow' | 'deny' | 'side_effects';

export type { Identity } from './identity.js';

export interface RunStep {
  tool: string;
  decision?: Decision;
}
/** An approval as the runtime reports it in the run view (`run.approvals`). */
export interface RunApproval {
  id: string;
  kind?: string;
  status?: 'pending' | 'granted' | 'denied' | 'expired' | 'consumed' | 'cancelled';
  tool?: string;
}
export interface RunView {
  id?: string;
  steps?: RunStep[];
  approvals?: RunApproval[];
}

/**
 * The approval a call cites (`approval_id`), as conditions read it (`$approval`): set by the engine,
 * which read it from the database, only when it is the caller's, granted, unexpired and filed for
 * exactly this call; never taken from a body.
 */
export interface CitedApprovalView {
  readonly kind: string;
  readonly status: 'granted';
  readonly decided_by: string;
  readonly decided_at: string;
  /** Its hash, for the engine to consume it by; not a member conditions read. */
  readonly hash: string;
}

export interface DecideRequest {
  readonly tool: string;
  readonly args: JsonObject;
  readonly run?: RunView;
  /** Facts the host runtime sets about where the call runs (a sandbox, a repository, a tenant); never the model. */
  readonly context?: JsonObject;
  /** The cited approval as `$approval` reads it (see CitedApprovalView); absent on the hot path. */
  readonly cited?: CitedApprovalView;
}

export interface PolicyIdentity {
  policy: string;
  version?: string;
  digest: string;
}

/** What a rule asks for when it turns a call into an approval. */
export interface ArgPath {
  readonly text: string;
  readonly segments: readonly string[];
}

export interface ApprovalShape {
  readonly kind?: string;
  readonly capability?: readonly ArgPath[];
  readonly presentation?: readonly ArgPath[];
}

/** `separate_from_requester`: `none` excludes only the requester itself; `team`, every approver of its team. */
export type Separation = 'none' | 'team';

/**
 * Who may answer a requirement, and how many must grant it (docs/spec.md section 2.4): APPROVER_ROLE
 * holders narrowed by every list given. Each member is present only when it narrows (no list is
 * empty, `quorum` is never 1, `separate_from_requester` never `none`), so a requirement that says
 * nothing of them hashes as before they existed.
 */
export interface Eligibility {
  /** Sorted, without repeats: the hash does not depend on how a policy orders them. */
  readonly approvers?: ApproverLists;
  /** 2..5. */
  readonly quorum?: number;
  readonly separate_from_requester?: 'team';
}

export interface ApproverLists {
  readonly roles?: readonly string[];
  readonly teams?: readonly string[];
  readonly users?: readonly string[];
}

/** One policy file's reason for asking: what the operator is shown, per file that asked. */
export interface ApprovalRequirement {
  /** The `policy` identity of the file. */
  policy: string;
  rule: string;
  kind: string;
  /** The policy's words (or generated text): never argument values. */
  reason: string;
  capability: JsonObject;
  presentation: JsonObject;
  /**
   * A budget's or rate limit's standing when it asked (docs/spec.md section 2.9): shown to the
   * operator, stored with the approval, never part of its hash (it changes with every call).
   */
  standing?: JsonObject;
  /** Who may answer and how many (Eligibility): hashed when present. */
  approvers?: ApproverLists;
  quorum?: number;
  separate_from_requester?: 'team';
}

/**
 * The approval a require_approval answer asks for. `requirements` lists every file that asked, in
 * load order (at least one); kind, capability and presentation are the first one's.
 */
export interface ApprovalDescriptor {
  kind: string;
  capability: JsonObject;
  presentation: JsonObject;
  requirements: ApprovalRequirement[];
  hash: string;
}

/** Selectors shared by rules and guards: every list given must match; an absent list matches all. */
export interface Selectors {
  readonly tools?: readonly Glob[];
  readonly kinds?: ReadonlySet<string>;
  readonly tags?: ReadonlySet<string>;
  readonly envs?: ReadonlySet<string>;
  readonly teams?: ReadonlySet<string>;
  readonly users?: ReadonlySet<string>;
  readonly agents?: ReadonlySet<string>;
}

/**
 * `confirm`: a rule with `confirm` and neither `allow` nor `abort`. It never allows anything itself; it
 * turns an allow that other rules or the default give into require_approval (docs/spec.md section 2.3).
 */
export type RuleEffect = 'allow' | 'deny' | 'abort' | 'confirm';

export interface Rule {
  readonly id: string;
  readonly index: number;
  readonly selectors: Selectors;
  readonly when?: CompiledCondition;
  /** Where `when` is written in its file, for warnings about it (`gatehouse check`). */
  readonly whenAt?: { readonly line: number; readonly column: number };
  readonly effect: RuleEffect;
  readonly confirm?: true | CompiledCondition;
  /** The approval's kind and shapes; absent when its `approval` block gives none of them. */
  readonly approval?: ApprovalShape;
  /** Who may answer the approval it asks for, and how many; absent: any approver, one grant. */
  readonly eligibility?: Eligibility;
  readonly reason?: string;
}

/** What a guard reads (docs/spec.md section 2.5): a call's arguments, a tool's result, a model's request or response. */
export type GuardStage = 'args' | 'result' | 'llm_request' | 'llm_response';
export const GUARD_STAGES: readonly GuardStage[] = ['args', 'result', 'llm_request', 'llm_response'];
/** The stages with no tool: a guard on one selects no tools, kinds or tags. */
export const MODEL_STAGES: ReadonlySet<GuardStage> = new Set(['llm_request', 'llm_response']);
/** `redact` only on what is inspected after the fact (never `args`: a call cannot be partly run). */
export type GuardAction = 'deny' | 'require_approval' | 'redact';

export interface Guard {
  readonly id: string;
  readonly guard: GuardName;
  readonly selectors: Selectors;
  readonly action: GuardAction;
  readonly on: ReadonlySet<GuardStage>;
  /** Its detector and scan: shared by every entry of a fixed guard, the entry's own for `pattern`. */
  readonly detector: GuardDetector;
}

/** A guard that reads a call's arguments (`on` names `args`; `redact` is refused there at load). */
export type ArgsGuard = Guard & { readonly action: Exclude<GuardAction, 'redact'> };

/** Whether /decide applies the guard: the others are inspected after the call (inspect.ts). */
export const isArgsGuard = (g: Guard): g is ArgsGuard => g.on.has('args') && g.action !== 'redact';

/** Who shares one counter of a budget or rate limit (docs/spec.md section 2.9). */
export type LimitScope = 'user' | 'team' | 'agent' | 'run' | 'global';
/** What a call that would cross a budget or rate limit is answered instead. */
export type OnExceed = 'deny' | 'require_approval' | 'abort';
export type CalendarUnit = 'minute' | 'hour' | 'day' | 'week' | 'month';
export const CALENDAR_UNITS: ReadonlySet<string> = new Set<CalendarUnit>(['minute', 'hour', 'day', 'week', 'month']);

/** A budget's window: a UTC calendar unit, or a fixed length in seconds (windows aligned to the Unix epoch). */
export type BudgetWindow =
  | { readonly calendar: CalendarUnit; readonly text: string }
  | { readonly seconds: number; readonly text: string };

/** An exact non-negative decimal: `text` for SQL (`numeric`), `value` the double, `written` its JSON text. */
export interface Amount {
  readonly text: string;
  readonly value: number;
  readonly written: string;
}

/** `sum`: the number at an argument path; `calls`: each call counts 1; `usd`: spend reported by POST /usage. */
export type BudgetMeasure = { readonly sum: ArgPath } | { readonly calls: true } | { readonly usd: true };

export interface Budget {
  readonly type: 'budget';
  readonly id: string;
  readonly index: number;
  /** The `policy` identity of the file. */
  readonly policy: string;
  readonly selectors: Selectors;
  readonly measure: BudgetMeasure;
  /** `max` (or `max_usd`): the most a window may count. */
  readonly max: Amount;
  readonly per: BudgetWindow;
  readonly scope: LimitScope;
  readonly onExceed: OnExceed;
}

export interface RateLimit {
  readonly type: 'rate_limit';
  readonly id: string;
  readonly index: number;
  readonly policy: string;
  readonly selectors: Selectors;
  /** At most this many calls allowed in any window of `perSeconds`. */
  readonly calls: number;
  readonly perSeconds: number;
  /** `per` as written (60, "1m"). */
  readonly perText: string | number;
  readonly scope: LimitScope;
  readonly onExceed: OnExceed;
}

/** A budget or a rate limit: what the route counts, statefully, for the calls it selects. */
export type Limit = Budget | RateLimit;

export interface CatalogueEntry {
  /** The name or glob as written in the file. */
  readonly pattern: string;
  /** Its position in the file's catalogue (the first matching glob wins). */
  readonly order: number;
  readonly glob: Glob;
  readonly kind: ToolKind;
  readonly tags: ReadonlySet<string>;
  readonly confirm: boolean;
  /** With `confirm`: the kind and shapes of its approval (absent: `confirm` and the whole call). */
  readonly approval?: ApprovalShape;
  /** With `confirm`: who may answer its approval, and how many. */
  readonly eligibility?: Eligibility;
  readonly validate?: ValidateFunction;
  /** With `validate`: the schema as written (conditions are checked against it at load, ./schema-check.ts). */
  readonly schema?: JsonObject | boolean;
  /** With `validate`: the property names its schema declares (a refusal may name only these). */
  readonly schemaNames?: ReadonlySet<string>;
  /** The property names its `result_schema` declares: the keys a result guard's reason may name. */
  readonly resultNames?: ReadonlySet<string>;
  /** The money fields its schema annotates (./money.ts): for display only, never decided on. */
  readonly money?: readonly MoneyField[];
  /** The `policy` identity of the file that defines it. */
  readonly policy: string;
}

/** One compiled policy file. */
export interface PolicyFile {
  readonly path: string;
  readonly identity: PolicyIdentity;
  /** The calls this file is consulted for; absent: every call (docs/spec.md section 2.7). */
  readonly scope?: Selectors;
  readonly environments: readonly string[];
  /** The default for the active environment. */
  readonly defaultMode: DefaultMode;
  readonly rules: readonly Rule[];
  readonly guards: readonly Guard[];
  readonly maxCalls?: number;
  readonly tools: readonly CatalogueEntry[];
  readonly budgets: readonly Budget[];
  readonly rateLimits: readonly RateLimit[];
}

/** Rules and guards of one file whose tool-dependent selectors (tools, kinds, tags, envs) match a tool. */
export interface FilePlan {
  /** False when the tool-dependent selectors of the file's `scope` leave the tool out: the file gives no answer. */
  readonly inScope: boolean;
  readonly rules: readonly Rule[];
  readonly guards: readonly ArgsGuard[];
}

/**
 * One description of a tool: the kind and tags one catalogue entry gives it (or `unknown` and no
 * tags when no catalogue names it), with the rules and guards that description selects in each file.
 */
export interface ToolView {
  /** The entry that gives this description; null for `unknown`, and for all of several entries at once. */
  readonly entry: CatalogueEntry | null;
  readonly kind: EffectiveKind;
  readonly tags: ReadonlySet<string>;
  /** Per file, in load order. */
  readonly files: readonly FilePlan[];
}

/** A budget or rate limit whose tool-dependent selectors match a tool (under some description), with its file. */
export interface PlannedLimit {
  readonly limit: Limit;
  /** The file's `scope`: its caller selectors are checked per request. */
  readonly fileScope: Selectors | undefined;
}

/** Everything about one tool name that does not depend on the caller or the arguments. */
export interface ToolPlan {
  readonly tool: string;
  /** Each file's catalogue entry for the tool (its exact name, else its first matching glob), in load order. */
  readonly entries: readonly CatalogueEntry[];
  /**
   * At least one. Several when files' catalogues describe the tool differently (kind or tags): every
   * file is asked under each description and its most severe answer counts, so no catalogue entry can
   * take a rule of another file off the tool (a later file never loosens an earlier one).
   */
  readonly views: readonly ToolView[];
  /**
   * The budgets and rate limits that may select a call of this tool, in load order (budgets before
   * rate limits within a file); empty for a policy set without any (the hot path allocates nothing).
   */
  readonly limits: readonly PlannedLimit[];
}

export interface PolicySet {
  readonly files: readonly PolicyFile[];
  readonly env: string | null;
  readonly identities: readonly PolicyIdentity[];
  /** The files' digests, in load order (the decision log names them on every line). */
  readonly digests: readonly string[];
  /** Every budget and rate limit of every file, in load order: none, and no decision touches a database. */
  readonly limits: readonly Limit[];
  /** The plan for a tool name: memoised, bounded; pure function of the set and the name. */
  plan(tool: string): ToolPlan;
}

/**
 * A budget or rate limit that selects a call (docs/spec.md section 2.9): the counter it is counted in
 * and by how much. `key` is null when the call lacks what the scope needs (a team, an agent, a run
 * id), `amount` null when a `sum` path holds no non-negative number: undecidable, so the call is
 * treated as exceeding (fail closed). A `max_usd` budget's amount is 0: it reads its counter.
 */
export interface Charge {
  readonly limit: Limit;
  readonly key: string | null;
  readonly amount: Amount | null;
}

/** Where an approval stands, added to a decision that involved one (`approval_id`, POST /approvals). */
export interface ApprovalRef {
  id: string;
  status: string;
}

export interface DecisionResult {
  decision: Decision;
  /** Operator-written or generated text; never argument values. */
  reason: string;
  /** What decided: a rule id, `<policy>#default`, `<policy>#limits.max_calls`, a guard id, or `schema`. */
  rule: string;
  policies: readonly PolicyIdentity[];
  approval?: ApprovalDescriptor & Partial<ApprovalRef>;
  /** Text for the model. */
  message: string;
  /** Set when the arguments failed the tool's schema (the model may correct them). */
  schemaRefused?: boolean;
  /** Set when deciding failed internally: the decision is then `deny` and the host answers 500. */
  internalError?: true;
  /**
   * The budgets and rate limits that select the call, when it is allowed or asks for approval (a
   * denied or aborted call counts in none). Absent when none does: the answer is final as it is. When
   * present, the answer is not final until the engine has counted the call (src/engine/limits.ts).
   */
  charges?: readonly Charge[];
}
