// inspect(): the pure, synchronous check of what comes back (docs/spec.md section 2.5): a tool's
// result, or a model's request or response, against every guard whose `on` names the stage and
// whose selectors match (for a result: the tool, as for its call; for a model stage: the caller and
// the environment). Only guards apply: rules decide calls, not results. The most severe finding
// wins: deny > require_approval > redact; nothing found allows.
import { approvalHash } from '../json/canonical.js';
import { numberLexeme, type JsonObject, type JsonValue } from '../json/value.js';
import { safePointer } from './decide.js';
import { findingText, type GuardFinding, type GuardScan } from './guards.js';
import { redactJson, type RedactingGuard } from './guards/redact.js';
import { CALLER_SELECTORS, selectorsMatch, TOOL_SELECTORS, type SelectorName, type Subject } from './match.js';
import { inspectMessage } from './message.js';
import type {
  ApprovalDescriptor,
  ApprovalRef,
  ApprovalRequirement,
  CatalogueEntry,
  Guard,
  GuardStage,
  Identity,
  PolicyFile,
  PolicyIdentity,
  PolicySet,
  RunView,
} from './model.js';

export type InspectStage = Exclude<GuardStage, 'args'>;

/** A tool's result, with the call that produced it (the approval of a result binds both). */
export interface ResultInspection {
  readonly stage: 'result';
  readonly tool: string;
  readonly args: JsonObject;
  readonly result: JsonValue;
  readonly run?: RunView;
  readonly context?: JsonObject;
}

/** What an agent sends to its model (`llm_request`) or receives from it (`llm_response`). */
export interface ModelInspection {
  readonly stage: 'llm_request' | 'llm_response';
  readonly content: JsonValue;
  readonly run?: RunView;
  readonly context?: JsonObject;
}

export type InspectRequest = ResultInspection | ModelInspection;

export type InspectDecision = 'allow' | 'require_approval' | 'deny';

/** One finding of a `redact` guard: `path` with undeclared keys written `*` (as in reasons). */
export interface InspectFinding {
  readonly guard: string;
  /** `email`, `card`…, a credential's format (`github_token`…), or a pattern's name. */
  readonly type: string;
  readonly path: string;
  /** Present when the finding is in an object key (then `path` is the object's). */
  readonly in_key?: true;
}

export interface InspectResult {
  readonly decision: InspectDecision;
  readonly stage: InspectStage;
  /** Names the guard and the path, never the value. */
  readonly reason: string;
  /** The guard id that decided; `builtin#guards` when no guard found anything. */
  readonly rule: string;
  readonly policies: readonly PolicyIdentity[];
  /** Text for the model: what was withheld and why. */
  readonly message: string;
  /**
   * The value with every `redact` guard's findings replaced: on `allow` when one found something,
   * and on `require_approval` (what the allow after the approval carries). Never on `deny`.
   */
  readonly redacted?: JsonValue;
  /** The `redact` guards' findings, with `redacted`. */
  readonly findings?: readonly InspectFinding[];
  /** On `require_approval` (result stage only): the approval asked for, its hash over the call and the result. */
  readonly approval?: ApprovalDescriptor & Partial<ApprovalRef>;
  /** Set when inspecting failed internally: the decision is then `deny` and the host answers 500. */
  readonly internalError?: true;
}

/** `rule` when nothing was found. */
export const NO_FINDING_RULE = 'builtin#guards';

const ACTION_SEVERITY = { redact: 1, require_approval: 2, deny: 3 } as const;

/** One file's most severe guard that found something. */
interface Outcome {
  readonly policy: string;
  readonly guard: Guard;
  readonly finding: GuardFinding;
  readonly reason: string;
}

/** Inspect one value. Never throws: an internal failure is a `deny` flagged `internalError`. */
export function inspect(set: PolicySet, request: InspectRequest, identity: Identity): InspectResult {
  try {
    return evaluate(set, request, identity);
  } catch {
    const reason = 'an internal error stopped the inspection';
    return {
      decision: 'deny',
      stage: request.stage,
      reason,
      rule: 'internal',
      policies: set.identities,
      message: inspectMessage('deny', what(request), reason, false),
      internalError: true,
    };
  }
}

/**
 * Whether any guard reads this stage for this caller (and, for `result`, this tool): a runtime or
 * proxy that asks can skip POST /inspect where it would always allow (an MCP proxy guards a tool's
 * results only where this holds).
 */
export function inspects(set: PolicySet, stage: InspectStage, identity: Identity, tool?: string): boolean {
  const { subjects, names } = subjectsOf(set, stage, identity, tool ?? '');
  return set.files.some((file) => applicableGuards(file, stage, subjects, names).length > 0);
}

function subjectsOf(
  set: PolicySet,
  stage: InspectStage,
  identity: Identity,
  tool: string,
): { subjects: Subject[]; names: readonly SelectorName[]; entries: readonly CatalogueEntry[] } {
  if (stage === 'result') {
    const plan = set.plan(tool);
    return {
      subjects: plan.views.map((view) => ({ tool, kind: view.kind, tags: view.tags, env: set.env, identity })),
      names: ALL_SELECTORS,
      entries: plan.entries,
    };
  }
  return {
    subjects: [{ tool: '', kind: 'unknown', tags: new Set(), env: set.env, identity }],
    names: MODEL_SELECTORS,
    entries: [],
  };
}

function what(request: InspectRequest): { stage: 'result'; tool: string } | { stage: 'llm_request' | 'llm_response' } {
  return request.stage === 'result' ? { stage: 'result', tool: request.tool } : { stage: request.stage };
}

const ALL_SELECTORS: readonly SelectorName[] = [...TOOL_SELECTORS, ...CALLER_SELECTORS];
// A model stage has no tool: only the environment and the caller select (compile.ts refuses the rest).
const MODEL_SELECTORS: readonly SelectorName[] = ['envs', ...CALLER_SELECTORS];

function evaluate(set: PolicySet, request: InspectRequest, identity: Identity): InspectResult {
  const stage = request.stage;
  const value = stage === 'result' ? request.result : request.content;
  // The text a number at the root was written with, when the request is the parsed body.
  const rootLexeme = numberLexeme(request, stage === 'result' ? 'result' : 'content');
  const { subjects, names, entries } = subjectsOf(set, stage, identity, stage === 'result' ? request.tool : '');
  // Keys are shown only where a catalogue entry's result_schema declares them; model content has none.
  const declared = (key: string): boolean => entries.some((e) => e.resultNames?.has(key));
  const where = (f: { path: string; inKey?: true }): string =>
    `${f.inKey ? 'in a key of' : 'at'} ${safePointer(f.path, declared)}`;

  // One scan per detector, however many files and guards use it.
  const scans = new Map<GuardScan, GuardFinding | null>();
  const scanWith = (guard: Guard): GuardFinding | null => {
    const { scan } = guard.detector;
    let finding = scans.get(scan);
    if (finding === undefined) {
      finding = scan(value, rootLexeme);
      scans.set(scan, finding);
    }
    return finding;
  };

  const outcomes: Outcome[] = [];
  const redacting: RedactingGuard[] = [];
  for (const file of set.files) {
    let best: Outcome | null = null;
    for (const guard of applicableGuards(file, stage, subjects, names)) {
      const finding = scanWith(guard);
      if (finding === null) continue;
      if (guard.action === 'redact') redacting.push({ id: guard.id, detector: guard.detector.detector });
      if (best !== null && ACTION_SEVERITY[guard.action] <= ACTION_SEVERITY[best.guard.action]) continue;
      best = {
        policy: file.identity.policy,
        guard,
        finding,
        reason: `guard "${guard.guard}" found ${findingText(finding.kind, guard.detector.detector)} ${where(finding)}`,
      };
    }
    if (best !== null) outcomes.push(best);
  }

  let top: Outcome | null = null;
  for (const o of outcomes)
    if (top === null || ACTION_SEVERITY[o.guard.action] > ACTION_SEVERITY[top.guard.action]) top = o;
  const base = { stage, policies: set.identities };
  if (top === null) {
    const reason = `no guard found anything in the ${stage === 'result' ? 'result' : stage === 'llm_request' ? "model's request" : "model's response"}`;
    return {
      ...base,
      decision: 'allow',
      reason,
      rule: NO_FINDING_RULE,
      message: inspectMessage('allow', what(request), reason, false),
    };
  }
  const { reason } = top;
  const rule = top.guard.id;
  if (top.guard.action === 'deny')
    return { ...base, decision: 'deny', reason, rule, message: inspectMessage('deny', what(request), reason, false) };

  let redaction: Pick<InspectResult, 'redacted' | 'findings'> = {};
  if (redacting.length > 0) {
    const r = redactJson(value, redacting, rootLexeme);
    redaction = {
      redacted: r.redacted,
      findings: r.findings.map((f) => ({
        guard: f.guard,
        type: f.type,
        path: safePointer(f.path, declared),
        ...(f.inKey ? { in_key: true as const } : {}),
      })),
    };
  }
  if (top.guard.action === 'redact')
    return {
      ...base,
      decision: 'allow',
      reason,
      rule,
      message: inspectMessage('allow', what(request), reason, true),
      ...redaction,
    };

  // require_approval: compile.ts allows it on `result` only.
  if (request.stage !== 'result') throw new Error('require_approval on a model stage');
  const asks = outcomes.filter((o) => o.guard.action === 'require_approval');
  return {
    ...base,
    decision: 'require_approval',
    reason,
    rule,
    message: inspectMessage('require_approval', what(request), reason, false),
    approval: approvalFor(request, asks),
    ...redaction,
  };
}

/** The file's guards on this stage that select the call (under any description of the tool) or the caller. */
function applicableGuards(
  file: PolicyFile,
  stage: InspectStage,
  subjects: readonly Subject[],
  names: readonly SelectorName[],
): Guard[] {
  const out: Guard[] = [];
  for (const guard of file.guards) {
    if (!guard.on.has(stage)) continue;
    const selected = subjects.some(
      (subject) =>
        (file.scope === undefined || selectorsMatchOnly(file.scope, subject, names)) &&
        selectorsMatchOnly(guard.selectors, subject, names),
    );
    if (selected) out.push(guard);
  }
  return out;
}

/** Every selector given must match; a selector outside `names` (a tool selector on a model stage) matches nothing. */
function selectorsMatchOnly(sel: Guard['selectors'], subject: Subject, names: readonly SelectorName[]): boolean {
  for (const name of ALL_SELECTORS) if (sel[name] !== undefined && !names.includes(name)) return false;
  return selectorsMatch(sel, subject, names);
}

/**
 * The approval of a result (docs/spec.md section 4.3): every file that asked, in load order; the
 * capability and presentation are the call (`{tool, args}`), and the hash also covers the result.
 */
function approvalFor(request: ResultInspection, asks: readonly Outcome[]): ApprovalDescriptor {
  const { tool, args } = request;
  const requirements = asks.map(
    (o): ApprovalRequirement => ({
      policy: o.policy,
      rule: o.guard.id,
      kind: o.guard.guard,
      reason: o.reason,
      capability: { tool, args },
      presentation: { tool, args },
    }),
  );
  const first = requirements[0];
  if (first === undefined) throw new Error('require_approval without a requirement'); // caught: deny
  return {
    kind: first.kind,
    capability: first.capability,
    presentation: first.presentation,
    requirements,
    hash: approvalHash({ tool, args, context: request.context, requirements, result: request.result }),
  };
}
