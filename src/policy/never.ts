// Property cases of policy test files (`never:` in `*.test.yaml`, docs/policies.md "Testing policies"):
// "a destructive tool is never allowed", checked over requests nobody wrote by hand. A property selects
// tools from the loaded catalogues; for each, fast-check generates arguments from the tool's schema,
// callers and run views, decides every request as /decide would, and on an answer the property
// forbids reports the counterexample fast-check shrank it to.
import fc from 'fast-check';
import { canonicalize } from '../json/canonical.js';
import type { JsonObject } from '../json/value.js';
import type { CompiledCondition, ConditionInput } from './condition/compile.js';
import { decide, explain } from './decide.js';
import type { Glob } from './glob.js';
import { sampleToolNames } from './glob-names.js';
import type { CatalogueEntry, Decision, DecisionResult, Identity, PolicySet, RunStep, RunView } from './model.js';
import { samplesArbitrary, samplesOf } from './probes.js';
import { freeArgsArbitrary, schemaArbitrary, type ValueHints } from './schema-arbitrary.js';
import type { ArgTest } from './condition/compile.js';

/** Who asks, in a property: one fixed caller (`claims`), or callers drawn from lists. */
export type CallerSpec =
  | { readonly claims: Identity }
  | {
      readonly users?: readonly string[];
      /** `null`: no team. */
      readonly teams?: readonly (string | null)[];
      /** `null`: no agent. */
      readonly agents?: readonly (string | null)[];
      readonly roles?: readonly string[];
    };

/** One `never:` entry of a test file, validated. */
export interface NeverProperty {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  /** Its key path in the file (`never.2`), for load problems. */
  readonly key: string;
  readonly name: string;
  readonly tools?: readonly Glob[];
  readonly kinds?: ReadonlySet<string>;
  readonly tags?: ReadonlySet<string>;
  readonly caller: CallerSpec;
  /** A fixed run view; else run views are generated. */
  readonly run?: RunView;
  /** The request's `context`, fixed (none when absent). */
  readonly context?: JsonObject;
  /** Only the generated requests this condition holds for are checked (docs/policies.md "Testing policies"). */
  readonly when?: CompiledCondition;
  /** The answers it must never get. */
  readonly decisions: ReadonlySet<Decision>;
  /** Generated requests per selected tool (and environment). */
  readonly runs: number;
  /** Derived from the file's name and the property's; `gatehouse test --seed` replaces it. */
  readonly seed: number;
}

/** A selected tool: one catalogue entry, and the concrete names it is checked under. */
export interface PropertyTarget {
  /** The catalogue entry's name or glob, as written. */
  readonly pattern: string;
  readonly names: readonly string[];
}

export interface Counterexample {
  readonly tool: string;
  readonly args: JsonObject;
  readonly identity: Identity;
  readonly run?: RunView;
  readonly got: DecisionResult;
}

/** One selected tool checked: the runs it took, and how it failed, if it did. */
export interface TargetCheck {
  readonly target: string;
  readonly runs: number;
  readonly shrinks: number;
  readonly counterexample?: Counterexample;
  /** Set when the check could not run: too few generated arguments passed the tool's schema. */
  readonly problem?: string;
  /** With `when`: how many of the generated requests it held for (only those were checked). */
  readonly matched?: number;
  /**
   * Rules that could give an answer the property forbids and that no generated request reached: the
   * property was never tried where it could fail through them (`gatehouse test` warns).
   */
  readonly unreached?: readonly { readonly policy: string; readonly rule: string }[];
}

/** Names sampled per glob entry; the name of a counterexample shrinks towards the shortest. */
const NAMES_PER_GLOB = 8;
/** A generated request the tool's schema refuses is skipped; more than this many per run fails the check. */
const MAX_SKIPS_PER_RUN = 4;
/** Run views longer than this are not generated (the service refuses more steps: request.ts). */
const MAX_STEPS = 10_000;

/**
 * The catalogue entries a property selects (every selector given must match, as for rules: `tools`
 * globs match the entry as written, or the concrete names it describes; `kinds`; any of `tags`),
 * each with the names it is checked under. An entry no name can be found for is left out.
 */
export function selectTargets(set: PolicySet, p: NeverProperty): PropertyTarget[] {
  const targets: PropertyTarget[] = [];
  for (const file of set.files) {
    for (const entry of file.tools) {
      if (p.kinds && !p.kinds.has(entry.kind)) continue;
      if (p.tags && ![...p.tags].some((t) => entry.tags.has(t))) continue;
      const names = namesFor(set, entry, p.tools, p.seed);
      if (names.length > 0) targets.push({ pattern: entry.pattern, names });
    }
  }
  return targets;
}

function namesFor(set: PolicySet, entry: CatalogueEntry, tools: readonly Glob[] | undefined, seed: number): string[] {
  const describes = (name: string): boolean => set.plan(name).entries.includes(entry);
  const selected = (name: string): boolean => tools === undefined || tools.some((g) => g.test(name));
  if (entry.glob.literal) return selected(entry.pattern) && describes(entry.pattern) ? [entry.pattern] : [];
  // A glob entry: a selector glob that matches it as written (`lookup_*` or `*` for `lookup_*`)
  // selects every name it describes; otherwise only the names a selector also matches.
  const whole = tools === undefined || tools.some((g) => g.test(entry.pattern));
  const narrowing = whole ? [] : (tools ?? []);
  return sampleToolNames({
    from: [entry.glob, ...narrowing.filter((g) => !g.literal)],
    literals: narrowing.filter((g) => g.literal).map((g) => g.source),
    keep: (name) => entry.glob.test(name) && (whole || selected(name)) && describes(name),
    seed,
    count: NAMES_PER_GLOB,
  });
}

/** Checked requests a property's reach is traced on, at most (each explained: every rule of every file). */
const COVERAGE_SAMPLES = 300;

/** Check a property on one selected tool: `runs` generated requests, the first failure shrunk. */
export function checkTarget(set: PolicySet, p: NeverProperty, target: PropertyTarget): TargetCheck {
  const request = fc.record(
    {
      tool: fc.constantFrom(...target.names),
      args: argsArbitrary(set, target, p),
      identity: callerArbitrary(set, p.caller),
      run: p.run ? fc.constant(p.run) : runArbitrary(set, target.names),
    },
    { requiredKeys: ['tool', 'args', 'identity'] },
  );
  type Generated = { tool: string; args: unknown; identity: Identity; run?: RunView | undefined };
  const requestOf = (r: Generated & { args: JsonObject }) => ({
    tool: r.tool,
    args: r.args,
    ...(r.run ? { run: r.run } : {}),
    ...(p.context ? { context: p.context } : {}),
  });
  const decideOne = (r: Generated): DecisionResult | null => {
    if (!isRequestArgs(r.args)) return null;
    const got = decide(set, requestOf({ ...r, args: r.args }), r.identity);
    return got.schemaRefused ? null : got;
  };
  // `when` selects the requests checked; one it does not hold for (false, or undecidable) passes.
  const selected = (r: Generated & { args: JsonObject }): boolean => {
    if (p.when === undefined) return true;
    const input: ConditionInput = { args: r.args, caller: r.identity, context: p.context, run: r.run, env: set.env };
    return p.when.evaluate(input) === true;
  };
  let matched = 0;
  const reach = new Reach(set, p, target);
  const details = fc.check(
    fc.property(request, (r) => {
      const got = decideOne(r);
      // Skipped, not counted: arguments the tool's schema refuses are `deny` before any rule
      // (docs/spec.md section 2, step 2), whatever the policy says.
      fc.pre(got !== null);
      const req = r as Generated & { args: JsonObject };
      if (!selected(req)) return true;
      matched++;
      reach.see(requestOf(req), req.identity);
      return !p.decisions.has(got!.decision);
    }),
    { seed: p.seed, numRuns: p.runs, maxSkipsPerRun: MAX_SKIPS_PER_RUN },
  );
  const base = { target: target.pattern, runs: details.numRuns, shrinks: details.numShrinks };
  if (!details.failed) {
    const unreached = reach.unreached();
    return { ...base, ...(p.when ? { matched } : {}), ...(unreached.length > 0 ? { unreached } : {}) };
  }
  const found = details.counterexample?.[0];
  const got = found ? decideOne(found) : null;
  // fast-check fails a property without a counterexample when too many runs were skipped, or when
  // generating threw (a schema this generator misreads).
  if (!found || !got || !isRequestArgs(found.args)) {
    const problem =
      details.numSkips > 0
        ? `too few generated arguments pass the schema of this tool (${details.numSkips} refused): it was hardly checked`
        : 'arguments could not be generated from the schema of this tool';
    return { ...base, problem };
  }
  return {
    ...base,
    counterexample: {
      tool: found.tool,
      args: found.args,
      identity: found.identity,
      ...(found.run ? { run: found.run } : {}),
      got,
    },
  };
}

/**
 * Whether the property was tried where it could fail: the rules selecting the target that could give
 * an answer it forbids (an allow rule: allow or require_approval; a confirm-only rule:
 * require_approval; a deny or abort rule: its own), and whether a checked request reached one: it
 * applied, or one of the tests of its `when` held. A policy that keeps the property true through a
 * rule's condition reaches it so; a generator that never builds what the rule tests does not.
 * Traced with explain() on at most COVERAGE_SAMPLES requests, and only until one is reached.
 */
class Reach {
  private readonly candidates = new Map<
    string,
    { policy: string; rule: string; when: CompiledCondition | undefined; decided: boolean }
  >();
  private reached = false;
  private traced = 0;

  constructor(
    private readonly set: PolicySet,
    p: NeverProperty,
    target: PropertyTarget,
  ) {
    const forbids = (effect: string): boolean =>
      effect === 'allow'
        ? p.decisions.has('allow') || p.decisions.has('require_approval')
        : effect === 'confirm'
          ? p.decisions.has('require_approval')
          : p.decisions.has(effect as 'deny' | 'abort');
    for (const name of target.names) {
      for (const view of set.plan(name).views) {
        view.files.forEach((plan, i) => {
          const policy = set.files[i]!.identity.policy;
          for (const rule of plan?.rules ?? [])
            if (forbids(rule.effect))
              this.candidates.set(`${policy}\n${rule.id}`, { policy, rule: rule.id, when: rule.when, decided: false });
        });
      }
    }
    // No rule could give a forbidden answer: the default, a guard or a limit decides, and is tried on every request.
    if (this.candidates.size === 0) this.reached = true;
  }

  see(request: Parameters<typeof explain>[1], identity: Identity): void {
    if (this.reached || this.traced >= COVERAGE_SAMPLES) return;
    this.traced++;
    const input: ConditionInput = {
      args: request.args,
      caller: identity,
      context: request.context,
      run: request.run,
      env: this.set.env,
    };
    for (const f of explain(this.set, request, identity).trace.files) {
      for (const rt of f.rules) {
        const entry = this.candidates.get(`${f.policy}\n${rt.id}`);
        if (entry === undefined || !rt.selectors.every((t) => t.matched)) continue;
        if (rt.applies === 'yes' || (entry.when !== undefined && entry.when.testsHeld(input) > 0)) this.reached = true;
        else if (rt.when === undefined || rt.when.truth !== 'undecidable') entry.decided = true;
      }
    }
  }

  /**
   * When none applied: those whose `when` was decided for some request. A rule whose `when` was never
   * decided is left out: the property's own setting (no `$context`, say) keeps it from applying, and
   * that fail-closed reading is what the property checks.
   */
  unreached(): { policy: string; rule: string }[] {
    if (this.reached) return [];
    return [...this.candidates.values()].filter((e) => e.decided).map(({ policy, rule }) => ({ policy, rule }));
  }
}

/** Arguments a request body can carry: an object, I-JSON throughout (the service refuses anything else before deciding). */
function isRequestArgs(args: unknown): args is JsonObject {
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return false;
  try {
    canonicalize(args as JsonObject);
    return true;
  } catch {
    return false;
  }
}

function argsArbitrary(set: PolicySet, target: PropertyTarget, p: NeverProperty): fc.Arbitrary<unknown> {
  const hints = hintsFor(set, target.names, p.when, p.context);
  // Every catalogue describing the name checks its schema; generate from the first one's.
  const schema = set.plan(target.names[0]!).entries.find((e) => e.validate)?.validate?.schema;
  return schema === undefined ? freeArgsArbitrary(hints) : schemaArbitrary(schema, hints);
}

// Literals in a condition's text: quoted strings, and numbers outside them.
const STRING_LITERAL = /"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'/g;
const NUMBER_LITERAL = /(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])/g;

/** The paths and literals of the conditions of every rule that could decide these names, and of the property's `when`. */
function hintsFor(
  set: PolicySet,
  names: readonly string[],
  when: CompiledCondition | undefined,
  context: JsonObject | undefined,
): ValueHints {
  const paths = new Set<string>();
  const numbers = new Set<number>();
  const strings = new Set<string>();
  const tests: ArgTest[] = [...(when?.tests ?? [])];
  for (const path of when?.paths ?? []) if (!path.startsWith('$')) paths.add(path);
  for (const name of names) {
    for (const view of set.plan(name).views) {
      for (const file of view.files) {
        for (const rule of file.rules) {
          for (const cond of [rule.when, rule.confirm]) {
            if (cond === undefined || cond === true) continue;
            // Argument paths only: a root such as `$caller.team` is not read from the arguments.
            for (const path of cond.paths) if (!path.startsWith('$')) paths.add(path);
            tests.push(...cond.tests);
            const text = cond.source.replace(STRING_LITERAL, (_, dq: string | undefined, sq: string | undefined) => {
              strings.add((dq ?? sq ?? '').replace(/\\(.)/g, '$1'));
              return ' ';
            });
            for (const m of text.matchAll(NUMBER_LITERAL)) numbers.add(Number(m[0]));
          }
        }
      }
    }
  }
  const at = new Map<string, fc.Arbitrary<string>>();
  for (const [path, samples] of samplesOf(tests, context)) {
    const arb = samplesArbitrary(samples);
    if (arb !== null) at.set(path, arb);
  }
  return { paths: [...paths], numbers: [...numbers].filter(Number.isFinite), strings: [...strings], at };
}

/**
 * The callers: the one `claims` gives, else drawn from the lists given; a list not given ranges over
 * the teams, users and agents the policies' rules and guards select (and none), so a rule that only
 * applies to one team is reached. The first of each list is what a counterexample shrinks to.
 */
function callerArbitrary(set: PolicySet, caller: CallerSpec): fc.Arbitrary<Identity> {
  if ('claims' in caller) return fc.constant(caller.claims);
  const named = { teams: new Set<string>(), users: new Set<string>(), agents: new Set<string>() };
  for (const file of set.files) {
    for (const { selectors } of [...file.rules, ...file.guards]) {
      for (const key of ['teams', 'users', 'agents'] as const) for (const v of selectors[key] ?? []) named[key].add(v);
    }
  }
  const users = caller.users ?? ['test-user', ...[...named.users].sort()];
  const teams = caller.teams ?? [null, ...[...named.teams].sort()];
  const agents = caller.agents ?? [null, ...[...named.agents].sort()];
  return fc.record({
    user: fc.constantFrom(...users),
    team: fc.constantFrom(...teams),
    agent: fc.constantFrom(...agents),
    roles: caller.roles ? fc.subarray([...caller.roles]) : fc.constant<string[]>([]),
  });
}

const STEP_DECISIONS: readonly Decision[] = ['allow', 'require_approval', 'deny', 'abort'];

/**
 * Run views: none, a few steps, or about as many as each `limits.max_calls` of the policies (one
 * under, at, one over), so the call budget is exercised. Steps name the tools being checked.
 */
function runArbitrary(set: PolicySet, names: readonly string[]): fc.Arbitrary<RunView | undefined> {
  const step: fc.Arbitrary<RunStep> = fc.record(
    { tool: fc.constantFrom(...names, 'other_tool'), decision: fc.constantFrom(...STEP_DECISIONS) },
    { requiredKeys: ['tool'] },
  );
  const view = (minLength: number, maxLength: number): fc.Arbitrary<RunView> =>
    fc.record(
      { id: fc.constantFrom('run-1', 'run-2'), steps: fc.array(step, { minLength, maxLength }) },
      { requiredKeys: ['steps'] },
    );
  const limits = [
    ...new Set(set.files.map((f) => f.maxCalls).filter((m): m is number => m !== undefined && m <= MAX_STEPS)),
  ].sort((a, b) => a - b);
  // Crossing shrinks a counterexample's run towards none, where the run is not what broke it.
  return fc.oneof(
    { withCrossShrink: true },
    { arbitrary: fc.constant(undefined), weight: 2 },
    { arbitrary: view(0, 3), weight: 5 },
    ...limits.map((m) => ({ arbitrary: view(Math.max(0, m - 1), Math.min(MAX_STEPS, m + 1)), weight: 3 })),
  );
}
