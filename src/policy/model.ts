// The shapes the policy core works with: a compiled policy set, a request, an identity, a decision.
// Everything here is built once at load (see compile.ts, load.ts) and read by decide.ts.
import type { ValidateFunction } from 'ajv';
import type { JsonObject } from '../json/value.js';
import type { CompiledCondition } from './condition/compile.js';
import type { Glob } from './glob.js';
import type { GuardName } from './guards.js';

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
export interface RunView {
  id?: string;
  steps?: RunStep[];
}

export interface DecideRequest {
  readonly tool: string;
  readonly args: JsonObject;
  readonly run?: RunView;
  /** Facts the host runtime sets about where the call runs (a sandbox, a repository, a tenant); never the model. */
  readonly context?: JsonObject;
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
  readonly effect: RuleEffect;
  readonly confirm?: true | CompiledCondition;
  readonly approval?: ApprovalShape;
  readonly reason?: string;
}

export interface Guard {
  readonly id: string;
  readonly guard: GuardName;
  readonly selectors: Selectors;
  readonly action: 'deny' | 'require_approval';
}

export interface CatalogueEntry {
  /** The name or glob as written in the file. */
  readonly pattern: string;
  /** Its position in the file's catalogue (the first matching glob wins). */
  readonly order: number;
  readonly glob: Glob;
  readonly kind: ToolKind;
  readonly tags: ReadonlySet<string>;
  readonly confirm: boolean;
  readonly validate?: ValidateFunction;
  /** With `validate`: the schema as written (conditions are checked against it at load, ./schema-check.ts). */
  readonly schema?: JsonObject | boolean;
  /** With `validate`: the property names its schema declares (a refusal may name only these). */
  readonly schemaNames?: ReadonlySet<string>;
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
}

/** Rules and guards of one file whose tool-dependent selectors (tools, kinds, tags, envs) match a tool. */
export interface FilePlan {
  /** False when the tool-dependent selectors of the file's `scope` leave the tool out: the file gives no answer. */
  readonly inScope: boolean;
  readonly rules: readonly Rule[];
  readonly guards: readonly Guard[];
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
}

export interface PolicySet {
  readonly files: readonly PolicyFile[];
  readonly env: string | null;
  readonly identities: readonly PolicyIdentity[];
  /** The files' digests, in load order (the decision log names them on every line). */
  readonly digests: readonly string[];
  /** The plan for a tool name: memoised, bounded; pure function of the set and the name. */
  plan(tool: string): ToolPlan;
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
}
