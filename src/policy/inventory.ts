// The tool inventory of GET /tools (docs/spec.md section 5.5): for one caller, each catalogue entry
// with what /decide answers for a call of it whose arguments pass its schema, or `depends` when the
// arguments or the run can change that answer.
//
// It is not a second evaluator: it asks decide() itself, twice per tool name, on two copies of the
// compiled set in which every condition that reads the call (its arguments, `$context`, `$run`) is
// pinned, once the lenient way and once the strict way (see `pin`), and the schemas are dropped (the
// call is one whose arguments pass them). The lenient call has no arguments; on the strict one every
// guard is pinned to find something. Neither has a run: the status is for a run below its limits (a limit of
// 0 still aborts both), and conditions on the run are pinned like the others. Conditions that
// read only the caller and the environment stay as they are: they are fixed for this caller.
//
// Why two calls are enough: decide()'s answer is monotone in every fact about a call. Each abort,
// deny or confirm-only rule that applies, each `confirm` that holds and a guard's finding can only
// make an answer more severe; an `allow: true` rule that applies can only make it less
// severe (docs/spec.md section 2.3: the most severe file wins, a confirmation never loosens). So every
// real call in a run below its limits is answered between the lenient and the strict answer (in severity order), and when the
// two are the same decision, every call gets it. When they differ the status is `depends`, even where
// the policy's conditions happen to exclude each other: fail closed, never a status that a call can
// contradict.
import type { JsonObject } from '../json/value.js';
import type { Truth } from './condition/compare.js';
import type { CompiledCondition } from './condition/compile.js';
import { decide } from './decide.js';
import type { GuardDetector } from './guards.js';
import type { TextDetector } from './guards/detector.js';
import { selectorsMatch, type SelectorName, type Subject } from './match.js';
import type { CatalogueEntry, Decision, Identity, PolicyFile, PolicySet, Rule, ToolKind } from './model.js';
import { nameClasses } from './name-classes.js';
import { createPolicySet } from './plan.js';
import { TOOL_NAME_PATTERN } from './request.js';

/** What the caller can expect from /decide for a call of a tool whose arguments pass its schema. */
export type ToolStatus = Decision | 'depends';

export interface InventoryItem {
  /** The catalogue entry's name or glob, as written. */
  readonly name: string;
  /** The `policy` identity of the file that catalogues it. */
  readonly policy: string;
  readonly kind: ToolKind;
  readonly tags: readonly string[];
  readonly status: ToolStatus;
  /**
   * The `rule` /decide names for such a call when every condition on the call goes the lenient way,
   * then the strict way (one id when both are the same); for a glob, over each class of the names it
   * alone describes.
   */
  readonly rules: readonly string[];
}

export interface Inventory {
  readonly env: string | null;
  readonly tools: readonly InventoryItem[];
}

/** The inventory of the set's catalogue for one caller. Pure; the caller-independent work is kept per set. */
export function inventory(set: PolicySet, identity: Identity): Inventory {
  const prepared = prepare(set);
  const tools = prepared.entries.map(({ entry, names, complete }): InventoryItem => {
    const base = { name: entry.pattern, policy: entry.policy, kind: entry.kind, tags: [...entry.tags] };
    // A name no request can carry (docs/spec.md section 5.1): /decide refuses every call of it.
    if (entry.glob.literal && names.length === 0) return { ...base, status: 'deny', rules: [] };
    let status: ToolStatus | null = complete && names.length > 0 ? null : 'depends';
    const rules: string[] = [];
    for (const name of names) {
      const one = statusOf(prepared, name, identity);
      for (const r of one.rules) if (!rules.includes(r)) rules.push(r);
      status = status === null || status === one.status ? one.status : 'depends';
    }
    return { ...base, status: status ?? 'depends', rules };
  });
  return { env: set.env, tools };
}

/** What one set needs for any caller: the two pinned copies, and the names to ask about per entry. */
interface Prepared {
  readonly lenient: PolicySet;
  readonly strict: PolicySet;
  readonly entries: readonly {
    readonly entry: CatalogueEntry;
    /** An exact entry: its name (none when no request can name it). A glob: one name per class of the names it alone describes. */
    readonly names: readonly string[];
    /** False when the names of a glob could not all be classed (too many globs to tell them apart): `depends`. */
    readonly complete: boolean;
  }[];
}

// A set is immutable once loaded (a reload makes a new one), so its preparation is kept with it.
const PREPARED = new WeakMap<PolicySet, Prepared>();

function prepare(set: PolicySet): Prepared {
  let prepared = PREPARED.get(set);
  if (prepared === undefined) {
    prepared = {
      lenient: createPolicySet(
        set.files.map((f) => pinnedFile(f, 'lenient')),
        set.env,
      ),
      strict: createPolicySet(
        set.files.map((f) => pinnedFile(f, 'strict')),
        set.env,
      ),
      entries: set.files.flatMap((file, i) => file.tools.map((entry) => ({ entry, ...namesFor(set, i, entry) }))),
    };
    PREPARED.set(set, prepared);
  }
  return prepared;
}

const TOOL_NAME = new RegExp(TOOL_NAME_PATTERN);

/** The names to ask /decide about for an entry: see Prepared. */
function namesFor(set: PolicySet, fileIndex: number, entry: CatalogueEntry): { names: string[]; complete: boolean } {
  if (entry.glob.literal) return { names: TOOL_NAME.test(entry.pattern) ? [entry.pattern] : [], complete: true };
  // Another entry describes a name (docs/spec.md section 2.3, step 1) when another file catalogues
  // it, or this file has it as an exact name or under an earlier glob.
  const excluded = set.files.flatMap((file, i) =>
    file.tools
      .filter((e) => e !== entry && (i !== fileIndex || e.glob.literal || e.order < entry.order))
      .map((e) => e.pattern),
  );
  // The names this entry alone describes all have its kind and tags: what tells them apart is which
  // `tools` selectors match them, of the rules, guards and scopes that select that kind and those tags.
  const subject: Subject = { tool: '', kind: entry.kind, tags: entry.tags, env: set.env };
  const selectors = new Set<string>();
  for (const file of set.files) {
    for (const sel of [
      ...(file.scope ? [file.scope] : []),
      ...file.rules.map((r) => r.selectors),
      ...file.guards.map((g) => g.selectors),
    ]) {
      if (sel.tools !== undefined && selectorsMatch(sel, subject, DESCRIPTION_SELECTORS))
        for (const g of sel.tools) selectors.add(g.source);
    }
  }
  const found = nameClasses({ glob: entry.pattern, excluded, selectors: [...selectors] });
  return { names: [...found.names], complete: found.complete };
}

/** The selectors a name's catalogue description settles (its `tools` aside). */
const DESCRIPTION_SELECTORS: readonly SelectorName[] = ['kinds', 'tags', 'envs'];

// The strict call's arguments (guards are pinned to find something in them, see pinnedFile).
export const STRICT_ARGS: JsonObject = Object.freeze({ note: 'jane@example.com' });

function statusOf(prepared: Prepared, tool: string, identity: Identity): { status: ToolStatus; rules: string[] } {
  const low = decide(prepared.lenient, { tool, args: {} }, identity);
  // Frozen shared values: decide() only reads a request.
  const high = decide(prepared.strict, { tool, args: STRICT_ARGS }, identity);
  // A failed evaluation allows nothing: ask /decide, which fails closed too.
  if (low.internalError || high.internalError) return { status: 'depends', rules: [] };
  return {
    status: low.decision === high.decision ? low.decision : 'depends',
    rules: low.rule === high.rule ? [low.rule] : [low.rule, high.rule],
  };
}

type Way = 'lenient' | 'strict';

const PINNED: TextDetector = { first: () => null, spans: () => [], numberDigits: [], text: () => 'a finding' };
const ALWAYS_FINDS: GuardDetector = { detector: PINNED, scan: () => ({ path: '', kind: 'pinned' }) };
const NEVER_FINDS: GuardDetector = { detector: PINNED, scan: () => null };

/** A copy of a file with its conditions on the call pinned one way, and no schemas (see the top of this file). */
function pinnedFile(file: PolicyFile, way: Way): PolicyFile {
  return {
    ...file,
    rules: file.rules.map((r) => pinnedRule(r, way)),
    // A guard's finding pinned too: found on the strict call, never on the lenient one, whatever
    // the guard looks for (an author's pattern included).
    guards: file.guards.map((g) => ({ ...g, detector: way === 'strict' ? ALWAYS_FINDS : NEVER_FINDS })),
    tools: file.tools.map(({ validate: _v, schema: _s, schemaNames: _n, ...entry }) => entry),
  };
}

// Roots a condition may read that are fixed for one caller: `$caller.…` and `$env`.
const FIXED_PATH = /^\$(?:caller\.|env$)/;

/** Whether a condition reads anything of the call: an argument, `$context` or `$run`. */
function readsCall(condition: CompiledCondition): boolean {
  return condition.paths.some((p) => !FIXED_PATH.test(p));
}

/**
 * A rule whose conditions on the call always come out the lenient way (the rule restricts nothing and
 * allows whatever it can) or the strict way (it restricts whatever it can and allows nothing), as
 * docs/spec.md section 3.5 reads a `when`: a restricting rule applies where it is true or undecidable;
 * an `allow: true` rule allows only where it is true, and where it is undecidable still asks by its
 * `confirm`. So the strict way is `true` for restricting rules, `undecidable` for an allow rule with
 * a `confirm` (no allow, but it asks), `false` for one without. The lenient way lets an allow rule
 * allow without its `confirm` counting, which no single call may do (a `when` true for the allow is
 * true for the confirm's applying too): a bound below every call, which is all the argument needs.
 */
function pinnedRule(rule: Rule, way: Way): Rule {
  const whenVaries = rule.when !== undefined && readsCall(rule.when);
  const confirmVaries = rule.confirm !== undefined && rule.confirm !== true && readsCall(rule.confirm);
  if (!whenVaries && !confirmVaries) return rule;
  const strict = way === 'strict';
  const restricts = rule.effect !== 'allow';
  const { when, confirm, ...rest } = rule;
  let pinnedWhen = when;
  if (whenVaries)
    pinnedWhen = pin(when!, strict ? (restricts ? true : confirm !== undefined ? 'undecidable' : false) : !restricts);
  let pinnedConfirm = confirmVaries ? pin(confirm as CompiledCondition, strict) : confirm;
  if (!strict && whenVaries && !restricts) pinnedConfirm = undefined;
  return { ...rest, ...(pinnedWhen ? { when: pinnedWhen } : {}), ...(pinnedConfirm ? { confirm: pinnedConfirm } : {}) };
}

function pin(condition: CompiledCondition, truth: Truth): CompiledCondition {
  const why = `pinned ${String(truth)}`;
  return {
    source: condition.source,
    paths: condition.paths,
    reads: condition.reads,
    tests: condition.tests,
    parsed: condition.parsed,
    evaluate: () => truth,
    explain: () => ({ truth, why }),
    testsHeld: () => 0,
  };
}
