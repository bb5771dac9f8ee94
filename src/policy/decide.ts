// decide(): the pure, synchronous evaluation of docs/spec.md section 2 for one request. explain() is the
// same evaluation with a trace recorded on the way: one evaluator, the trace is optional output.
import { approvalHash } from '../json/canonical.js';
import type { ConditionInput, ConditionResult } from './condition/compile.js';
import { findingText, type GuardFinding, type GuardScan } from './guards.js';
import { chargesFor } from './limits.js';
import { CALLER_SELECTORS, selectorsMatch, traceSelectors, type SelectorTrace, type Subject } from './match.js';
import { modelMessage } from './message.js';
import {
  isArgsGuard,
  SEVERITY,
  type ApprovalDescriptor,
  type ApprovalShape,
  type Eligibility,
  type Decision,
  type DecideRequest,
  type DecisionResult,
  type DefaultMode,
  type ApprovalRequirement,
  type CatalogueEntry,
  type EffectiveKind,
  type FilePlan,
  type ArgsGuard,
  type Identity,
  type PolicyFile,
  type PolicySet,
  type Rule,
  type RuleEffect,
  type ToolPlan,
  type ToolView,
} from './model.js';
import { pickPaths } from './path.js';

export interface RuleTrace {
  id: string;
  effect: RuleEffect;
  selectors: SelectorTrace[];
  when?: ConditionResult;
  confirm?: ConditionResult;
  /** `restricts_only`: its `when` was undecidable, so it counts where it restricts, not where it allows. */
  applies: 'yes' | 'no' | 'restricts_only';
}
export interface GuardTrace {
  id: string;
  guard: string;
  action: Decision;
  selectors: SelectorTrace[];
  finding: GuardFinding | null | 'not_run';
}
export interface FileTrace {
  policy: string;
  version?: string;
  digest: string;
  default: DefaultMode;
  /** With several descriptions of the tool: the index in `catalogue.views` this file's answer (and trace) is from. */
  view?: number;
  /** The file's `scope`, when it has one: each selector, matched or not. */
  scope?: SelectorTrace[];
  rules: RuleTrace[];
  guards: GuardTrace[];
  limits?: { max_calls: number; steps: number };
  /** Absent when the file's scope does not select the call: it gave no answer (and its rules are not listed). */
  decision?: Decision;
  reason?: string;
  rule?: string;
}
/** A description of the tool by the catalogue (docs/spec.md section 2, step 1). */
export interface CatalogueTrace {
  entry: string | null;
  policy: string | null;
  kind: EffectiveKind;
  tags: string[];
}
/** A budget or rate limit the tool's selectors reach (docs/spec.md section 2.9), and whether it selects this call. */
export interface LimitTrace {
  id: string;
  type: 'budget' | 'rate_limit';
  policy: string;
  /** Its caller selectors (and its file's scope's), matched or not. */
  selectors: SelectorTrace[];
  selected: boolean;
  scope: string;
  /** Selected but not countable: what the call lacks (fail closed: treated as exceeding). */
  undecidable?: 'amount' | 'scope';
}
export interface Trace {
  tool: string;
  /** The first description; with `views` when files' catalogues describe the tool differently. */
  catalogue: CatalogueTrace & { views?: CatalogueTrace[] };
  schema: 'none' | 'passed' | 'failed';
  files: FileTrace[];
  /** Present when budgets or rate limits reach the tool; the route adds the counters it read. */
  limits?: LimitTrace[];
}
export type ExplainResult = DecisionResult & { trace: Trace };

/** Decide one request. Never throws: an internal failure is a `deny` flagged `internalError`. */
export function decide(set: PolicySet, request: DecideRequest, identity: Identity): DecisionResult {
  try {
    return evaluate(set, request, identity, null);
  } catch {
    return internalError(set, request.tool);
  }
}

/** decide() with the trace of every rule of every file considered. */
export function explain(set: PolicySet, request: DecideRequest, identity: Identity): ExplainResult {
  const trace: Trace = {
    tool: request.tool,
    catalogue: { entry: null, policy: null, kind: 'unknown', tags: [] },
    schema: 'none',
    files: [],
  };
  try {
    return { ...evaluate(set, request, identity, trace), trace };
  } catch {
    return { ...internalError(set, request.tool), trace };
  }
}

/** A file that answered require_approval, and how. */
interface Requirement {
  policy: string;
  outcome: Outcome;
}

/** What one file decided, before it is combined with the others. */
interface Outcome {
  decision: Decision;
  reason: string;
  rule: string;
  /** For require_approval: the approval kind and shape (`null`: the default `{tool, args}`). */
  kind?: string;
  shape?: ApprovalShape | null;
  /** For require_approval: who may answer it and how many (absent: any approver, one grant). */
  eligibility?: Eligibility;
}

// With no policy file at all: the side-effect default and an empty catalogue (docs/spec.md section 2).
const BUILTIN: PolicyFile = {
  path: '(builtin)',
  identity: { policy: 'builtin', digest: '' },
  environments: [],
  defaultMode: 'side_effects',
  rules: [],
  guards: [],
  tools: [],
  budgets: [],
  rateLimits: [],
};
const NO_PLAN: FilePlan = { inScope: true, rules: [], guards: [] };

function evaluate(set: PolicySet, request: DecideRequest, identity: Identity, trace: Trace | null): DecisionResult {
  const plan = set.plan(request.tool);
  const views = plan.views;
  if (trace) {
    trace.catalogue = describeView(views[0]!);
    if (views.length > 1) trace.catalogue.views = views.map(describeView);
  }
  // Step 2: the tool's schema (every catalogue's, if several files describe it) is checked once,
  // before any policy is consulted.
  for (const entry of plan.entries) {
    if (!entry.validate) continue;
    const ok = entry.validate(request.args);
    if (trace) trace.schema = ok ? 'passed' : 'failed';
    if (!ok) {
      const e = entry.validate.errors?.[0];
      const where = safeInstancePath(e?.instancePath ?? '', [entry]);
      // docs/spec.md section 2, step 2: the failing path and keyword (and ajv's text, which never quotes the value).
      const reason = `the arguments do not match the schema of ${JSON.stringify(request.tool)}: ${where} ${e?.message ?? 'is invalid'} (keyword ${e?.keyword ?? 'unknown'})`;
      return result(
        set,
        request,
        { decision: 'deny', reason, rule: `${entry.policy}#tools.${entry.pattern}.schema` },
        true,
      );
    }
  }
  // A guard's scan depends on the arguments alone: run once per request, however many files and
  // descriptions ask for it (a 1 MiB body is scanned once, not once per file and view).
  const findings: GuardFindings = new Map();
  // One subject per description, built once for every file (usually a single one).
  const subjects = views.map(
    (view): Subject => ({ tool: request.tool, kind: view.kind, tags: view.tags, env: set.env, identity }),
  );
  // What conditions read, built once per request.
  const input: ConditionInput = {
    args: request.args,
    caller: identity,
    context: request.context,
    run: request.run,
    env: set.env,
    approval: request.cited,
  };
  // Each file answers under every description of the tool its scope selects; its most severe answer
  // counts (the first description among equals). A file whose scope selects none gives no answer.
  const fileAnswer = (file: PolicyFile, i: number | null): Outcome | null => {
    let fileBest: Outcome | null = null;
    let fileTrace: FileTrace | null = null;
    for (let v = 0; v < views.length; v++) {
      const filePlan = i === null ? NO_PLAN : (views[v]!.files[i] ?? NO_PLAN);
      const subject = subjects[v]!; // v < views.length
      const ft: FileTrace | null = trace ? newFileTrace(file) : null;
      if (!inScope(file, filePlan, subject, ft)) {
        if (ft && fileTrace === null && v === 0) fileTrace = ft;
        continue;
      }
      // Decide evaluates only the plan's candidates; explain evaluates every rule (selectors re-checked).
      const outcome = evaluateFile(
        file,
        plan,
        ft ? file.rules : filePlan.rules,
        ft ? file.guards.filter(isArgsGuard) : filePlan.guards,
        subject,
        request,
        input,
        findings,
        ft,
      );
      if (fileBest !== null && SEVERITY[outcome.decision] <= SEVERITY[fileBest.decision]) continue;
      fileBest = outcome;
      if (ft) {
        Object.assign(
          ft,
          { decision: outcome.decision, reason: outcome.reason, rule: outcome.rule },
          views.length > 1 ? { view: v } : {},
        );
        fileTrace = ft;
      }
    }
    if (fileTrace) trace!.files.push(fileTrace);
    return fileBest;
  };
  const answers = set.files.map((file, i) => ({ policy: file.identity.policy, outcome: fileAnswer(file, i) }));
  // No file answered (none is loaded, or every one is scoped out): the built-in default
  // (docs/spec.md section 2.7), fail closed.
  if (answers.every((a) => a.outcome === null))
    answers.push({ policy: BUILTIN.identity.policy, outcome: fileAnswer(BUILTIN, null) });
  let best: Outcome | null = null;
  // Every file that asks for approval, in load order: when that is the answer, the approval carries
  // all of them, so one grant never satisfies a requirement the operator was not shown.
  let asks: Requirement[] | null = null;
  for (const { policy, outcome } of answers) {
    if (outcome === null) continue;
    if (outcome.decision === 'require_approval') (asks ??= []).push({ policy, outcome });
    // The most severe wins; among equals the first file in load order gives reason and rule.
    if (best === null || SEVERITY[outcome.decision] > SEVERITY[best.decision]) best = outcome;
  }
  const res = result(set, request, best!, false, asks);
  // Budgets and rate limits: only a call that may be allowed is counted (docs/spec.md section 2.9). A
  // set without any spends nothing here.
  if (plan.limits.length > 0) {
    if (trace) trace.limits = traceLimits(plan, subjects[0]!, request, identity);
    if (res.decision === 'allow' || res.decision === 'require_approval') {
      const charges = chargesFor(plan.limits, request, identity, subjects[0]!);
      if (charges.length > 0) res.charges = charges;
    }
  }
  return res;
}

function traceLimits(plan: ToolPlan, subject: Subject, request: DecideRequest, identity: Identity): LimitTrace[] {
  return plan.limits.map(({ limit, fileScope }) => {
    const selectors = [
      ...(fileScope ? traceSelectors(fileScope, subject).filter((t) => CALLER_SELECTORS.includes(t.selector)) : []),
    ];
    selectors.push(...traceSelectors(limit.selectors, subject).filter((t) => CALLER_SELECTORS.includes(t.selector)));
    const selected = selectors.every((t) => t.matched);
    const out: LimitTrace = {
      id: limit.id,
      type: limit.type,
      policy: limit.policy,
      selectors,
      selected,
      scope: limit.scope,
    };
    if (selected) {
      const [charge] = chargesFor([{ limit, fileScope: undefined }], request, identity, subject);
      if (charge?.key === null) out.undecidable = 'scope';
      else if (charge?.amount === null) out.undecidable = 'amount';
    }
    return out;
  });
}

/** Whether the file's `scope` selects this call: its tool-dependent selectors were settled by the plan. */
function inScope(file: PolicyFile, filePlan: FilePlan, subject: Subject, ft: FileTrace | null): boolean {
  if (file.scope === undefined) return true;
  if (ft) {
    ft.scope = traceSelectors(file.scope, subject);
    return ft.scope.every((s) => s.matched);
  }
  return filePlan.inScope && selectorsMatch(file.scope, subject, CALLER_SELECTORS);
}

// An array index, not a key that could be a phone or card number.
const INDEX = /^(?:0|[1-9]\d{0,5})$/;

/**
 * An argument path for reasons and messages, keys that no schema of `entries` declares written `*`:
 * the model chose them, and one may be an email, a card number, a secret or an instruction to the
 * operator (docs/spec.md section 2: never the offending value).
 */
function safeInstancePath(pointer: string, entries: readonly CatalogueEntry[]): string {
  return safePointer(pointer, (key) => entries.some((e) => e.schemaNames?.has(key)));
}

/** A JSON pointer for reasons: array indexes as they are, a key only where `declared` says a schema declares it, else `*`. */
export function safePointer(pointer: string, declared: (key: string) => boolean): string {
  if (pointer === '') return '/';
  return pointer
    .split('/')
    .map((token, i) => {
      if (i === 0) return token;
      const key = token.replaceAll('~1', '/').replaceAll('~0', '~');
      return INDEX.test(key) || declared(key) ? token : '*';
    })
    .join('/');
}

function describeView(view: ToolView): CatalogueTrace {
  return {
    entry: view.entry?.pattern ?? null,
    policy: view.entry?.policy ?? null,
    kind: view.kind,
    tags: [...view.tags],
  };
}

/** Each guard scan's finding on this request's arguments, once run (a fixed guard's scan is shared by its entries). */
type GuardFindings = Map<GuardScan, GuardFinding | null>;

function evaluateFile(
  file: PolicyFile,
  plan: ToolPlan,
  rules: readonly Rule[],
  guards: readonly ArgsGuard[],
  subject: Subject,
  request: DecideRequest,
  input: ConditionInput,
  findings: GuardFindings,
  ft: FileTrace | null,
): Outcome {
  const args = request.args;
  // For abort and deny, a rule whose `when` held is preferred to one that applies only because its
  // `when` could not be decided: its reason is the true one.
  let abort: Rule | undefined;
  let abortUndecided = false;
  let deny: Rule | undefined;
  let denyUndecided = false;
  let allow: Rule | undefined;
  let confirmBy: Rule | undefined;
  for (const rule of rules) {
    const rt: RuleTrace | null = ft ? { id: rule.id, effect: rule.effect, selectors: [], applies: 'no' } : null;
    const applies = ruleApplies(rule, subject, input, rt);
    if (rt) ft!.rules.push(rt);
    if (applies === 'no') continue;
    if (rule.effect === 'abort') {
      if (abort === undefined || (abortUndecided && applies === 'yes'))
        [abort, abortUndecided] = [rule, applies === 'undecidable'];
      if (!ft && !abortUndecided) break; // nothing is more severe than an abort whose condition held
    } else if (rule.effect === 'deny') {
      if (deny === undefined || (denyUndecided && applies === 'yes'))
        [deny, denyUndecided] = [rule, applies === 'undecidable'];
    } else {
      // A confirm-only rule never allows: it only asks about what something else allows.
      if (applies === 'yes' && rule.effect === 'allow') allow ??= rule;
      if ((rt || !confirmBy) && confirmHolds(rule, input, rt)) confirmBy ??= rule;
    }
  }

  let out: Outcome;
  if (abort)
    out = {
      decision: 'abort',
      reason: abortUndecided ? undecidedReason(abort, input) : (abort.reason ?? `rule "${abort.id}" ends the run`),
      rule: abort.id,
    };
  else if (deny)
    out = {
      decision: 'deny',
      reason: denyUndecided ? undecidedReason(deny, input) : (deny.reason ?? `rule "${deny.id}" denies it`),
      rule: deny.id,
    };
  // A rule that can ask gives its `reason` for asking; allowed without asking, it says so plainly
  // (docs/spec.md section 2.2).
  else if (allow)
    out = {
      decision: 'allow',
      reason: (allow.confirm ? undefined : allow.reason) ?? `rule "${allow.id}" allows it`,
      rule: allow.id,
    };
  else out = byDefault(file, subject);

  // Step 5: an allowed call asks when the catalogue or an applicable rule says so.
  if (out.decision === 'allow') {
    const entry = plan.entries.find((e) => e.confirm);
    if (entry) {
      out = {
        decision: 'require_approval',
        reason: `${JSON.stringify(subject.tool)} always needs confirmation`,
        rule: `${entry.policy}#tools.${entry.pattern}`,
        kind: entry.approval?.kind ?? 'confirm',
        shape: entry.approval ?? null,
        ...(entry.eligibility ? { eligibility: entry.eligibility } : {}),
      };
    } else if (confirmBy) {
      out = {
        decision: 'require_approval',
        reason: confirmBy.reason ?? `rule "${confirmBy.id}" asks for confirmation`,
        rule: confirmBy.id,
        kind: confirmBy.approval?.kind ?? 'confirm',
        shape: confirmBy.approval ?? null,
        ...(confirmBy.eligibility ? { eligibility: confirmBy.eligibility } : {}),
      };
    }
  }

  // Step 6: the run's call budget, counted from the run view.
  if (file.maxCalls !== undefined) {
    const steps = request.run?.steps?.length ?? 0;
    if (ft) ft.limits = { max_calls: file.maxCalls, steps };
    if (steps >= file.maxCalls && out.decision !== 'abort') {
      out = {
        decision: 'abort',
        reason: `the run reached its limit of ${file.maxCalls} calls`,
        rule: `${file.identity.policy}#limits.max_calls`,
      };
    }
  }

  // Step 7: guards only matter where they would make the answer more severe.
  for (const guard of guards) {
    const action = guard.action;
    const gt: GuardTrace | null = ft
      ? {
          id: guard.id,
          guard: guard.guard,
          action,
          selectors: traceSelectors(guard.selectors, subject),
          finding: 'not_run',
        }
      : null;
    if (gt) ft!.guards.push(gt);
    const matches = gt
      ? gt.selectors.every((s) => s.matched)
      : selectorsMatch(guard.selectors, subject, CALLER_SELECTORS);
    if (!matches || (!gt && SEVERITY[action] <= SEVERITY[out.decision])) continue;
    const { scan, detector } = guard.detector;
    let finding = findings.get(scan);
    if (finding === undefined) {
      finding = scan(args);
      findings.set(scan, finding);
    }
    if (gt) gt.finding = finding;
    if (finding && SEVERITY[action] > SEVERITY[out.decision]) {
      out = {
        decision: action,
        // The path's keys were chosen by the model unless the tool's schema declares them: `*` (a key
        // can be prose addressed to the operator, or a secret).
        reason: `guard "${guard.guard}" found ${findingText(finding.kind, detector)} ${finding.inKey ? 'in a key of' : 'at'} ${safeInstancePath(finding.path, plan.entries)}`,
        rule: guard.id,
        kind: guard.guard,
        shape: null,
      };
    }
  }
  return out;
}

/** 'yes', 'no', or 'undecidable' (its `when` could not be decided: it applies where it restricts). */
function ruleApplies(
  rule: Rule,
  subject: Subject,
  input: ConditionInput,
  rt: RuleTrace | null,
): 'yes' | 'no' | 'undecidable' {
  let selected: boolean;
  if (rt) {
    rt.selectors = traceSelectors(rule.selectors, subject);
    selected = rt.selectors.every((s) => s.matched);
  } else {
    selected = selectorsMatch(rule.selectors, subject, CALLER_SELECTORS); // the plan settled the rest
    if (!selected) return 'no';
  }
  let when: ConditionResult['truth'] = true;
  if (rule.when) {
    if (rt) {
      rt.when = rule.when.explain(input);
      when = rt.when.truth;
    } else {
      when = rule.when.evaluate(input);
    }
  }
  // docs/spec.md section 3: an undecidable `when` applies a restricting rule (allow: false, abort, confirm)
  // and does not apply an allowing one: fail closed both ways.
  const applies =
    !selected || when === false
      ? 'no'
      : when === true
        ? 'yes'
        : rule.effect !== 'allow' || rule.confirm
          ? 'undecidable'
          : 'no';
  if (rt) rt.applies = applies === 'undecidable' ? (rule.effect === 'allow' ? 'restricts_only' : 'yes') : applies;
  return applies;
}

/**
 * The reason of a rule that applies only because its `when` could not be decided (docs/spec.md
 * section 3.5): what could not be decided (paths and built-ins, never a value), not the rule's own
 * reason, which speaks of a case that may not be this one.
 */
function undecidedReason(rule: Rule, input: ConditionInput): string {
  const why = rule.when?.explain(input).why ?? '';
  const what = why.startsWith('undecidable: ') ? why.slice('undecidable: '.length) : why;
  return `rule "${rule.id}" applies because its condition could not be decided${what === '' ? '' : `: ${what}`}`;
}

/** A rule's `confirm`: true, or a condition that holds or cannot be decided. */
function confirmHolds(rule: Rule, input: ConditionInput, rt: RuleTrace | null): boolean {
  if (rule.confirm === undefined) return false;
  if (rule.confirm === true) {
    if (rt) rt.confirm = { truth: true, why: 'confirm: true' };
    return true;
  }
  if (rt) {
    rt.confirm = rule.confirm.explain(input);
    return rt.confirm.truth !== false;
  }
  return rule.confirm.evaluate(input) !== false;
}

function byDefault(file: PolicyFile, subject: Subject): Outcome {
  const rule = `${file.identity.policy}#default`;
  // Only a file that declares environments has a default per environment to name.
  const where = subject.env === null || file.environments.length === 0 ? '' : ` in ${subject.env}`;
  switch (file.defaultMode) {
    case 'allow':
      return { decision: 'allow', reason: `no rule matched; the default${where} is allow`, rule };
    case 'deny':
      return { decision: 'deny', reason: `no rule matched; the default${where} is deny`, rule };
    case 'side_effects':
      switch (subject.kind) {
        case 'read_only':
        case 'local_mutation':
          return { decision: 'allow', reason: `no rule matched; ${subject.kind} tools are allowed by default`, rule };
        case 'remote_mutation':
          return {
            decision: 'require_approval',
            reason: 'no rule matched; remote_mutation tools need approval by default',
            rule,
            kind: 'remote_mutation',
            shape: null,
          };
        case 'destructive':
          return { decision: 'deny', reason: 'no rule matched; destructive tools are denied by default', rule };
        case 'unknown':
          return {
            decision: 'deny',
            reason: 'the tool is not in the catalogue; unknown tools are denied by default',
            rule,
          };
      }
  }
}

function result(
  set: PolicySet,
  request: DecideRequest,
  out: Outcome,
  schemaRefused: boolean,
  asks: readonly Requirement[] | null = null,
): DecisionResult {
  const res: DecisionResult = {
    decision: out.decision,
    reason: out.reason,
    rule: out.rule,
    policies: set.identities,
    message: modelMessage(out.decision, request.tool, out.reason, schemaRefused),
  };
  if (schemaRefused) res.schemaRefused = true;
  if (out.decision === 'require_approval') res.approval = approvalFor(request, asks ?? []);
  return res;
}

/**
 * docs/spec.md sections 2 and 4: the approval of every file that asked (at least one), its hash over all of
 * them; `kind`, `capability` and `presentation` are the first requirement's.
 */
function approvalFor(request: DecideRequest, asks: readonly Requirement[]): ApprovalDescriptor {
  const { tool, args } = request;
  const requirements = asks.map(({ policy, outcome }): ApprovalRequirement => {
    const shape = outcome.shape ?? null;
    return {
      policy,
      rule: outcome.rule,
      kind: outcome.kind ?? 'confirm',
      reason: outcome.reason,
      capability: shape === null ? { tool, args } : shape.capability ? pickPaths(args, shape.capability) : {},
      presentation: shape === null ? { tool, args } : shape.presentation ? pickPaths(args, shape.presentation) : {},
      ...eligibilityOf(outcome.eligibility),
    };
  });
  const first = requirements[0];
  if (first === undefined) throw new Error('require_approval without a requirement'); // caught: internal error, nothing allowed
  const { kind, capability, presentation } = first;
  return {
    kind,
    capability,
    presentation,
    requirements,
    hash: approvalHash({ tool, args, context: request.context, requirements }),
  };
}

/** A requirement's eligibility members: fresh lists (a requirement is data, never shared with the policy). */
function eligibilityOf(e: Eligibility | undefined): Partial<ApprovalRequirement> {
  if (e === undefined) return {};
  const lists = e.approvers;
  return {
    ...(lists
      ? {
          approvers: {
            ...(lists.roles ? { roles: [...lists.roles] } : {}),
            ...(lists.teams ? { teams: [...lists.teams] } : {}),
            ...(lists.users ? { users: [...lists.users] } : {}),
          },
        }
      : {}),
    ...(e.quorum !== undefined ? { quorum: e.quorum } : {}),
    ...(e.separate_from_requester ? { separate_from_requester: e.separate_from_requester } : {}),
  };
}

function internalError(set: PolicySet, tool: string): DecisionResult {
  const reason = 'an internal error stopped the policy evaluation';
  return {
    decision: 'deny',
    reason,
    rule: 'internal',
    policies: set.identities,
    message: modelMessage('deny', tool, reason, false),
    internalError: true,
  };
}

function newFileTrace(file: PolicyFile): FileTrace {
  const { policy, version, digest } = file.identity;
  return {
    policy,
    ...(version !== undefined ? { version } : {}),
    digest,
    default: file.defaultMode,
    rules: [],
    guards: [],
  };
}
