// Differential test (in the manner of Cedar's differential random testing): decide() against a deliberately
// simple reference evaluator written straight from docs/spec.md section 2 (steps 1-7) and section 3 (the
// undecidable rules). The reference reads the generated policy DOCUMENTS, not the compiled set: no
// index, no plan, no cache. It borrows only the leaf semantics from src: condition truth values
// (compileCondition), glob matching (compileGlob), the pii scan (runGuard) and the hash (approvalHash).
import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { canonicalize, sha256 } from '../../src/json/canonical.js';
import type { JsonObject, JsonValue } from '../../src/json/value.js';
import { on } from '../helpers/condition.js';
import { compileCondition, type CompiledCondition, type Truth } from '../../src/policy/condition/compile.js';
import { decide, explain } from '../../src/policy/decide.js';
import { compileGlob, type Glob } from '../../src/policy/glob.js';
import { runGuard } from '../../src/policy/guards.js';
import type { DecideRequest, DecisionResult, Identity } from '../../src/policy/model.js';
import {
  identityArb,
  requestArb,
  schemaAccepts,
  setArb,
  toPolicySet,
  type GenApproval,
  type GenDoc,
  type GenSelectors,
  type GenSet,
} from '../helpers/policy-gen.js';
import { runs } from '../helpers/runs.js';

type Decision = 'allow' | 'require_approval' | 'deny' | 'abort';
const SEV: Record<Decision, number> = { allow: 0, require_approval: 1, deny: 2, abort: 3 };

interface RefRequirement {
  policy: string;
  rule: string;
  kind: string;
  capability: JsonObject;
  presentation: JsonObject;
}
interface RefApproval {
  kind: string;
  capability: JsonObject;
  presentation: JsonObject;
  requirements: RefRequirement[];
  hash: string;
}
interface RefAnswer {
  decision: Decision;
  rule: string;
  schemaRefused?: boolean;
  approval?: RefApproval;
}
interface Outcome {
  decision: Decision;
  rule: string;
  kind?: string;
  shape?: GenApproval | null;
}

// Compiling a condition or glob is a pure function of its text; memoising the compiled leaf keeps the
// property fast and adds no state to the evaluation itself.
const conditions = new Map<string, CompiledCondition>();
const globs = new Map<string, Glob>();
const truth = (source: string, args: JsonObject): Truth => {
  let c = conditions.get(source);
  if (c === undefined) conditions.set(source, (c = compileCondition(source)));
  return c.evaluate(on(args));
};
const globMatches = (pattern: string, name: string): boolean => {
  let g = globs.get(pattern);
  if (g === undefined) globs.set(pattern, (g = compileGlob(pattern)));
  return g.test(name);
};
const isLiteral = (pattern: string): boolean => !/[*?[]/.test(pattern);

/** The value at a dotted path: own properties and in-range array indexes only. */
function readPath(args: JsonObject, path: string): JsonValue | undefined {
  let cur: JsonValue | undefined = args;
  for (const seg of path.split('.')) {
    if (Array.isArray(cur)) cur = /^\d+$/.test(seg) && Number(seg) < cur.length ? cur[Number(seg)] : undefined;
    else if (cur !== null && typeof cur === 'object' && Object.hasOwn(cur, seg)) cur = cur[seg];
    else return undefined;
  }
  return cur;
}

function pick(args: JsonObject, paths: readonly string[] | undefined): JsonObject {
  const out: JsonObject = {};
  for (const p of paths ?? []) {
    const v = readPath(args, p);
    if (v !== undefined) out[p] = v;
  }
  return out;
}

/** docs/spec.md section 2 and 3, read literally. */
export function reference(gen: GenSet, req: DecideRequest, who: Identity): RefAnswer {
  const { tool, args } = req;
  const files = [...gen.files].sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));

  // Step 1: each file's catalogue entry (exact name first, then its first matching glob). Where files
  // describe the tool differently (kind or tags), every file answers under each description and its
  // most severe answer counts (the fail-closed reading of "a later file never loosens an earlier one":
  // see docs/design.md); any confirm counts and every schema must pass.
  const cats = files.flatMap((f) => {
    const entries = Object.entries(f.doc.tools ?? {}).map(([pattern, entry]) => ({
      pattern,
      entry,
      policy: f.doc.policy,
    }));
    const hit =
      entries.find((e) => isLiteral(e.pattern) && e.pattern === tool) ??
      entries.find((e) => !isLiteral(e.pattern) && globMatches(e.pattern, tool));
    return hit ? [hit] : [];
  });
  const views: { kind: string; tags: readonly string[] }[] =
    cats.length === 0
      ? [{ kind: 'unknown', tags: [] }]
      : cats.map((c) => ({ kind: c.entry.kind, tags: c.entry.tags ?? [] }));
  // With several descriptions, all of them at once too: the most severe kind, every tag.
  const SEVERE = ['read_only', 'local_mutation', 'remote_mutation', 'destructive'];
  if (cats.length > 1) {
    views.push({
      kind: SEVERE[Math.max(...cats.map((c) => SEVERE.indexOf(c.entry.kind)))]!,
      tags: cats.flatMap((c) => c.entry.tags ?? []),
    });
  }
  const confirmCat = cats.find((c) => c.entry.confirm === true);

  // Step 2: the schemas, once, before any file.
  for (const c of cats) {
    if (c.entry.schema !== undefined && !schemaAccepts(c.entry.schema, args)) {
      return { decision: 'deny', rule: `${c.policy}#tools.${c.pattern}.schema`, schemaRefused: true };
    }
  }

  // Every list given must match; an absent list matches everything.
  const selected = (s: GenSelectors, { kind, tags }: (typeof views)[number]): boolean =>
    (s.tools === undefined || s.tools.some((p) => globMatches(p, tool))) &&
    (s.kinds === undefined || s.kinds.includes(kind)) &&
    (s.tags === undefined || s.tags.some((t) => tags.includes(t))) &&
    (s.envs === undefined || (gen.env !== null && s.envs.includes(gen.env))) &&
    (s.teams === undefined || (who.team !== null && s.teams.includes(who.team))) &&
    (s.users === undefined || s.users.includes(who.user)) &&
    (s.agents === undefined || (who.agent !== null && s.agents.includes(who.agent)));

  // A file whose scope does not select the call (under this description) gives no answer.
  const evalFile = (doc: GenDoc, view: (typeof views)[number]): Outcome | null => {
    if (doc.scope !== undefined && !selected(doc.scope, view)) return null;
    const { kind } = view;
    // Step 3: applicable rules. An undecidable `when` applies where the rule restricts
    // (allow: false, abort, confirm) and not where it allows (allow: true).
    const rules = (doc.rules ?? []).map((r, i) => ({
      r,
      id: r.id ?? `${doc.policy}#${i}`,
      w: r.when === undefined ? true : truth(r.when, args),
    }));
    const applying = rules.filter((x) => selected(x.r, view) && x.w !== false);
    // Step 4: the first rule whose `when` held, else the first that applies because it is undecidable.
    const first = (effect: (x: (typeof applying)[number]) => boolean) =>
      applying.find((x) => effect(x) && x.w === true) ?? applying.find(effect);
    const abort = first((x) => x.r.abort === true);
    const deny = first((x) => x.r.allow === false);
    const allow = applying.find((x) => x.r.allow === true && x.w === true);
    const rule = `${doc.policy}#default`;
    let out: Outcome;
    if (abort) out = { decision: 'abort', rule: abort.id };
    else if (deny) out = { decision: 'deny', rule: deny.id };
    else if (allow) out = { decision: 'allow', rule: allow.id };
    else {
      const mode =
        doc.default === undefined
          ? 'side_effects'
          : typeof doc.default === 'string'
            ? doc.default
            : doc.default[gen.env!]!;
      if (mode !== 'side_effects') out = { decision: mode, rule };
      else if (kind === 'read_only' || kind === 'local_mutation') out = { decision: 'allow', rule };
      else if (kind === 'remote_mutation')
        out = { decision: 'require_approval', rule, kind: 'remote_mutation', shape: null };
      else out = { decision: 'deny', rule };
    }
    // Step 5: the catalogue's confirm, else an applicable rule's confirm that holds or is undecidable
    // (an allow: true rule's, or a confirm-only rule's: one with neither allow nor abort).
    if (out.decision === 'allow') {
      const asks = applying.find(
        (x) =>
          x.r.allow !== false &&
          x.r.abort !== true &&
          x.r.confirm !== undefined &&
          (x.r.confirm === true || truth(x.r.confirm, args) !== false),
      );
      if (confirmCat)
        out = {
          decision: 'require_approval',
          rule: `${confirmCat.policy}#tools.${confirmCat.pattern}`,
          kind: 'confirm',
          shape: null,
        };
      else if (asks)
        out = {
          decision: 'require_approval',
          rule: asks.id,
          kind: asks.r.approval?.kind ?? 'confirm',
          shape: asks.r.approval ?? null,
        };
    }
    // Step 6.
    if (doc.limits !== undefined && (req.run?.steps?.length ?? 0) >= doc.limits.max_calls && out.decision !== 'abort') {
      out = { decision: 'abort', rule: `${doc.policy}#limits.max_calls` };
    }
    // Step 7: a finding turns the decision into the guard's action when that is more severe.
    (doc.guards ?? []).forEach((g, i) => {
      const action = g.action ?? 'deny';
      if (selected(g, view) && SEV[action] > SEV[out.decision] && runGuard('pii', args) !== null) {
        out = { decision: action, rule: g.id ?? `${doc.policy}#guards.${i}`, kind: 'pii', shape: null };
      }
    });
    return out;
  };

  // Every file its scope selects applies; the most severe wins; among equals the first file in load
  // order. A file's answer is its most severe under any description (the first among equals). When no
  // file answers (none, or every one scoped out), the built-in side_effects default does.
  const answerOf = (doc: GenDoc): { policy: string; out: Outcome } | null => {
    let fileBest: Outcome | null = null;
    for (const view of views) {
      const out = evalFile(doc, view);
      if (out !== null && (fileBest === null || SEV[out.decision] > SEV[fileBest.decision])) fileBest = out;
    }
    return fileBest === null ? null : { policy: doc.policy, out: fileBest };
  };
  let answers = files.map((f) => answerOf(f.doc)).filter((a) => a !== null);
  if (answers.length === 0) answers = [answerOf({ policy: 'builtin' })!];
  let best: Outcome | null = null;
  for (const { out } of answers) if (best === null || SEV[out.decision] > SEV[best.decision]) best = out;
  const answer: RefAnswer = { decision: best!.decision, rule: best!.rule };
  if (best!.decision === 'require_approval') {
    // Every file that asked, in load order; the hash over all of them (one: the one-requirement form).
    const requirements = answers
      .filter((a) => a.out.decision === 'require_approval')
      .map(({ policy, out }): RefRequirement => {
        const shape = out.shape ?? null;
        return {
          policy,
          rule: out.rule,
          kind: out.kind!,
          capability: shape === null ? { tool, args } : pick(args, shape.capability),
          presentation: shape === null ? { tool, args } : pick(args, shape.presentation),
        };
      });
    const { kind, capability, presentation } = requirements[0]!;
    const hash =
      requirements.length === 1
        ? sha256(canonicalize({ args, capability, kind, presentation, tool }))
        : sha256(
            canonicalize({
              args,
              requirements: requirements.map((r) => ({
                capability: r.capability,
                kind: r.kind,
                presentation: r.presentation,
              })),
              tool,
            }),
          );
    answer.approval = { kind, capability, presentation, requirements, hash };
  }
  return answer;
}

const observed = (got: DecisionResult): RefAnswer => {
  const o: RefAnswer = { decision: got.decision, rule: got.rule };
  if (got.schemaRefused !== undefined) o.schemaRefused = got.schemaRefused;
  if (got.approval !== undefined) {
    // Reasons are text; the reference checks everything else about each requirement.
    const { kind, capability, presentation, hash } = got.approval;
    const requirements = got.approval.requirements.map(({ policy, rule, kind: k, capability: c, presentation: p }) => ({
      policy,
      rule,
      kind: k,
      capability: c,
      presentation: p,
    }));
    o.approval = { kind, capability, presentation, requirements, hash };
  }
  return o;
};

/** Cheap comparison for the hot loop; on a mismatch, expect() prints the difference. */
function agrees(got: DecisionResult, want: RefAnswer): boolean {
  const o = observed(got);
  if (!isDeepStrictEqual(o, want)) expect(o).toEqual(want);
  return true;
}

function compare(gen: GenSet, req: DecideRequest, who: Identity): void {
  expect(observed(decide(toPolicySet(gen), req, who))).toEqual(reference(gen, req, who));
}

describe('decide() agrees with the reference evaluator', () => {
  it('on random sets and requests (decision, rule, approval kind, capability, presentation, hash)', () => {
    fc.assert(
      fc.property(
        setArb(),
        fc.array(fc.tuple(requestArb(), identityArb), { minLength: 1, maxLength: 6 }),
        (gen, pairs) => {
          const set = toPolicySet(gen);
          return pairs.every(([req, who]) => agrees(decide(set, req, who), reference(gen, req, who)));
        },
      ),
      { numRuns: runs(2000) },
    );
  });

  it('on random sets whose catalogues carry argument schemas', () => {
    fc.assert(
      fc.property(
        setArb({ minFiles: 1, schemaP: 0.5 }),
        fc.array(fc.tuple(requestArb(), identityArb), { minLength: 1, maxLength: 10 }),
        (gen, pairs) => {
          const set = toPolicySet(gen);
          return pairs.every(([req, who]) => agrees(decide(set, req, who), reference(gen, req, who)));
        },
      ),
      { numRuns: runs(60) },
    );
  });

  it('the reference itself gets the spec examples right (so the property is not vacuous)', () => {
    const who: Identity = { user: 'u1', team: 'team1', agent: null, roles: [] };
    const gen: GenSet = {
      env: 'prod',
      files: [
        {
          name: 'p00.json',
          doc: {
            policy: 'p0',
            environments: ['dev', 'prod'],
            default: { dev: 'allow', prod: 'deny' },
            tools: { t0: { kind: 'remote_mutation' }, 'g_*': { kind: 'destructive' } },
            rules: [
              { tools: ['t0'], allow: true, confirm: 'a > 5', approval: { kind: 'k_one', capability: ['a'] } },
              { kinds: ['destructive'], envs: ['prod'], abort: true },
              { tools: ['t1'], when: 'a > 5', allow: false },
            ],
          },
        },
      ],
    };
    expect(reference(gen, { tool: 't0', args: { a: 1 } }, who)).toEqual({ decision: 'allow', rule: 'p0#0' });
    expect(reference(gen, { tool: 't0', args: { a: 9 } }, who)).toMatchObject({
      decision: 'require_approval',
      rule: 'p0#0',
      approval: { kind: 'k_one', capability: { a: 9 }, presentation: {} },
    });
    expect(reference(gen, { tool: 'g_a', args: {} }, who)).toEqual({ decision: 'abort', rule: 'p0#1' });
    expect(reference(gen, { tool: 't1', args: {} }, who)).toEqual({ decision: 'deny', rule: 'p0#2' }); // undecidable when restricts
    expect(reference(gen, { tool: 't1', args: { a: 1 } }, who)).toEqual({ decision: 'deny', rule: 'p0#default' });
    for (const [tool, args] of [
      ['t0', { a: 1 }],
      ['t0', { a: 9 }],
      ['t0', {}],
      ['g_a', {}],
      ['t1', {}],
      ['t1', { a: 1 }],
    ] as const) {
      compare(gen, { tool, args: { ...args } }, who);
    }
  });
});

// Corner cases the random search reaches only rarely, and minimized counterexamples, kept as
// regressions. (No disagreement with src itself was found; see the mutation-check cases below.)
describe('regressions and corner cases (reference and decide agree)', () => {
  const who: Identity = { user: 'u1', team: null, agent: null, roles: [] };
  const one = (doc: GenDoc, env: GenSet['env'] = null): GenSet => ({ env, files: [{ name: 'p00.json', doc }] });

  it('two files asking, one under each of two descriptions: both requirements, one hash over both', () => {
    const gen: GenSet = {
      env: null,
      files: [
        {
          name: 'p00.json',
          doc: {
            policy: 'p0',
            default: 'allow',
            tools: { t0: { kind: 'remote_mutation' } },
            rules: [{ tools: ['t0'], allow: true, confirm: 'a > 5', approval: { kind: 'k0', capability: ['a'] } }],
          },
        },
        { name: 'p01.json', doc: { policy: 'p1', tools: { 't*': { kind: 'read_only' } } } },
        {
          name: 'p02.json',
          doc: { policy: 'p2', default: 'allow', guards: [{ guard: 'pii', action: 'require_approval' }] },
        },
      ],
    };
    const req = { tool: 't0', args: { a: 9, to: 'jane@example.com' } };
    compare(gen, req, who);
    const got = decide(toPolicySet(gen), req, who);
    expect(got.approval?.requirements.map((r) => [r.policy, r.kind])).toEqual([
      ['p0', 'k0'],
      ['p1', 'remote_mutation'],
      ['p2', 'pii'],
    ]);
  });

  it('an allow rule with an undecidable `when` still asks through its confirm (it restricts there)', () => {
    const gen = one({
      policy: 'p0',
      default: 'allow',
      rules: [{ tools: ['t0'], when: 'a > 5', allow: true, confirm: true }],
    });
    compare(gen, { tool: 't0', args: {} }, who);
    expect(decide(toPolicySet(gen), { tool: 't0', args: {} }, who).decision).toBe('require_approval');
  });

  it('a confirm condition that is false on an allow rule with an undecidable `when` does not ask', () => {
    const gen = one({
      policy: 'p0',
      default: 'allow',
      rules: [{ tools: ['t0'], when: 'c', allow: true, confirm: 'b == "x"' }],
    });
    compare(gen, { tool: 't0', args: { b: 'y' } }, who);
    expect(decide(toPolicySet(gen), { tool: 't0', args: { b: 'y' } }, who)).toMatchObject({
      decision: 'allow',
      rule: 'p0#default',
    });
  });

  it('a rule listing the same exact tool twice, next to a glob rule, keeps rule order', () => {
    const gen = one({
      policy: 'p0',
      rules: [
        { tools: ['t?'], allow: true, confirm: 'a > 5' },
        { tools: ['t0', 't1', 't0'], allow: true, confirm: true, approval: { kind: 'k_one' } },
      ],
    });
    compare(gen, { tool: 't0', args: { a: 9 } }, who);
    compare(gen, { tool: 't0', args: { a: 1 } }, who);
  });

  it('across files every description counts: an exact read_only name does not undo a destructive glob', () => {
    const gen: GenSet = {
      env: null,
      files: [
        { name: 'p00.json', doc: { policy: 'p0', tools: { 't?': { kind: 'destructive' } } } },
        { name: 'p01.json', doc: { policy: 'p1', tools: { t0: { kind: 'read_only' } } } },
      ],
    };
    compare(gen, { tool: 't0', args: {} }, who);
    compare(gen, { tool: 't1', args: {} }, who);
    expect(decide(toPolicySet(gen), { tool: 't0', args: {} }, who).decision).toBe('deny');
  });

  it('a second description of a tool cannot take a rule of another file off it', () => {
    // Read as one "most severe kind", p1's destructive would make p0's remote_mutation deny miss.
    const gen: GenSet = {
      env: null,
      files: [
        {
          name: 'p00.json',
          doc: {
            policy: 'p0',
            default: 'allow',
            tools: { t0: { kind: 'remote_mutation' } },
            rules: [{ kinds: ['remote_mutation'], allow: false }],
          },
        },
        { name: 'p01.json', doc: { policy: 'p1', default: 'allow', tools: { 't?': { kind: 'destructive' } } } },
      ],
    };
    compare(gen, { tool: 't0', args: {} }, who);
    expect(decide(toPolicySet(gen), { tool: 't0', args: {} }, who)).toMatchObject({ decision: 'deny', rule: 'p0#0' });
    expect(decide(toPolicySet({ env: null, files: [gen.files[0]!] }), { tool: 't0', args: {} }, who)).toMatchObject({
      decision: 'deny',
      rule: 'p0#0',
    });
  });

  it("another file's tags do not satisfy an allowing rule's tags under this file's description", () => {
    const gen: GenSet = {
      env: null,
      files: [
        {
          name: 'p00.json',
          doc: {
            policy: 'p0',
            default: 'deny',
            tools: { t0: { kind: 'read_only' } },
            rules: [{ tags: ['money'], allow: true }],
          },
        },
        {
          name: 'p01.json',
          doc: { policy: 'p1', default: 'allow', tools: { 't?': { kind: 'destructive', tags: ['money'] } } },
        },
      ],
    };
    compare(gen, { tool: 't0', args: {} }, who);
    expect(decide(toPolicySet(gen), { tool: 't0', args: {} }, who)).toMatchObject({
      decision: 'deny',
      rule: 'p0#default',
    });
    // The explanation says which description each file answered under.
    const { trace } = explain(toPolicySet(gen), { tool: 't0', args: {} }, who);
    expect(trace.catalogue.views?.map((v) => [v.entry, v.kind, v.tags])).toEqual([
      ['t0', 'read_only', []],
      ['t?', 'destructive', ['money']],
    ]);
    expect(trace.files.map((f) => [f.policy, f.view, f.decision])).toEqual([
      ['p0', 0, 'deny'],
      ['p1', 0, 'allow'],
    ]);
  });

  it("a restricting rule naming one file's kind and another file's tag still applies", () => {
    const gen: GenSet = {
      env: null,
      files: [
        {
          name: 'p00.json',
          doc: {
            policy: 'p0',
            default: 'allow',
            tools: { t0: { kind: 'read_only', tags: ['money'] } },
            rules: [{ kinds: ['destructive'], tags: ['money'], abort: true }],
          },
        },
        { name: 'p01.json', doc: { policy: 'p1', default: 'allow', tools: { 't?': { kind: 'destructive' } } } },
      ],
    };
    compare(gen, { tool: 't0', args: {} }, who);
    expect(decide(toPolicySet(gen), { tool: 't0', args: {} }, who)).toMatchObject({ decision: 'abort', rule: 'p0#0' });
    const { trace } = explain(toPolicySet(gen), { tool: 't0', args: {} }, who);
    expect(trace.catalogue.views?.at(-1)).toEqual({ entry: null, policy: null, kind: 'destructive', tags: ['money'] });
  });

  it('one description shared by several files is one view (no views list in the trace)', () => {
    const gen: GenSet = {
      env: null,
      files: [
        { name: 'p00.json', doc: { policy: 'p0', tools: { t0: { kind: 'read_only', tags: ['ops'] } } } },
        { name: 'p01.json', doc: { policy: 'p1', tools: { 't?': { kind: 'read_only', tags: ['ops'] } } } },
      ],
    };
    expect(toPolicySet(gen).plan('t0').views).toHaveLength(1);
    const { trace } = explain(toPolicySet(gen), { tool: 't0', args: {} }, who);
    expect(trace.catalogue).toEqual({ entry: 't0', policy: 'p0', kind: 'read_only', tags: ['ops'] });
    expect(trace.files.every((f) => f.view === undefined)).toBe(true);
  });

  it('no file at all: the built-in side_effects default with an empty catalogue', () => {
    compare({ env: null, files: [] }, { tool: 't0', args: {} }, who);
    expect(decide(toPolicySet({ env: null, files: [] }), { tool: 't0', args: {} }, who).rule).toBe('builtin#default');
  });

  it('max_calls 0 aborts every call, and a later guard cannot change it', () => {
    const gen = one({ policy: 'p0', default: 'allow', limits: { max_calls: 0 }, guards: [{ guard: 'pii' }] });
    compare(gen, { tool: 't0', args: { b: 'jane@example.com' } }, who);
  });

  it('a require_approval guard, then a deny guard: the deny (more severe) wins', () => {
    const gen = one({
      policy: 'p0',
      default: 'allow',
      guards: [
        { guard: 'pii', action: 'require_approval' },
        { guard: 'pii', id: 'g-deny' },
      ],
    });
    compare(gen, { tool: 't0', args: { note: 'mail jane@example.com' } }, who);
    expect(decide(toPolicySet(gen), { tool: 't0', args: { note: 'mail jane@example.com' } }, who).rule).toBe('g-deny');
  });

  // The next four are the minimized counterexamples the property produced against deliberately
  // broken copies of src (mutation check of this test): each pins one place a plausible bug hides.
  it('catalogue globs: within a file the first match gives the description, across files every description counts', () => {
    const gen: GenSet = {
      env: null,
      files: [
        { name: 'p00.json', doc: { policy: 'p0', tools: { '*x': { kind: 'remote_mutation' } } } },
        {
          name: 'p01.json',
          doc: { policy: 'p1', tools: { '[ab]x': { kind: 'destructive' }, t0: { kind: 'local_mutation' } } },
        },
      ],
    };
    compare(gen, { tool: 'ax', args: {} }, who);
    expect(decide(toPolicySet(gen), { tool: 'ax', args: {} }, who)).toMatchObject({ decision: 'deny' });
    expect(decide(toPolicySet(gen), { tool: 'cx', args: {} }, who)).toMatchObject({
      decision: 'require_approval',
      approval: { kind: 'remote_mutation' },
    });
  });

  it('a rule whose tools mix a glob and an exact name matches through the glob too', () => {
    const gen = one({ policy: 'p0', default: 'deny', rules: [{ tools: ['?x', 't0'], users: ['u1'], allow: true }] });
    compare(gen, { tool: 'ax', args: {} }, who);
    compare(gen, { tool: 't0', args: {} }, who);
    expect(decide(toPolicySet(gen), { tool: 'ax', args: {} }, who).decision).toBe('allow');
  });

  it('a confirm condition that cannot be decided asks', () => {
    const gen = one({ policy: 'p0', rules: [{ tools: ['t0'], allow: true, confirm: 'a > 5' }] });
    for (const args of [{}, { a: '5' }, { a: null }] as JsonObject[]) compare(gen, { tool: 't0', args }, who);
    expect(decide(toPolicySet(gen), { tool: 't0', args: { a: '5' } }, who).decision).toBe('require_approval');
  });

  it('max_calls: exactly that many steps already aborts; one fewer does not', () => {
    const gen = one({ policy: 'p0', default: 'allow', limits: { max_calls: 2 } });
    compare(gen, { tool: 't0', args: {}, run: { steps: [{ tool: 't0' }, { tool: 't1' }] } }, who);
    compare(gen, { tool: 't0', args: {}, run: { steps: [{ tool: 't0' }] } }, who);
    expect(
      decide(toPolicySet(gen), { tool: 't0', args: {}, run: { steps: [{ tool: 't0' }, { tool: 't1' }] } }, who).rule,
    ).toBe('p0#limits.max_calls');
  });

  it('a confirm-only rule asks about what the default allows, and never loosens a default deny', () => {
    for (const def of ['allow', 'deny', 'side_effects'] as const) {
      const gen = one({
        policy: 'p0',
        default: def,
        tools: { t0: { kind: 'read_only' } },
        rules: [{ tools: ['t0'], confirm: 'a > 5', approval: { kind: 'k_one' } }],
      });
      for (const args of [{ a: 9 }, { a: 1 }, {}] as JsonObject[]) compare(gen, { tool: 't0', args }, who);
    }
    const allowing = one({
      policy: 'p0',
      default: 'allow',
      rules: [{ tools: ['t0'], confirm: 'a > 5', approval: { kind: 'k_one' } }],
    });
    const denying = one({ policy: 'p0', default: 'deny', rules: [{ tools: ['t0'], confirm: 'a > 5' }] });
    expect(decide(toPolicySet(allowing), { tool: 't0', args: { a: 9 } }, who)).toMatchObject({
      decision: 'require_approval',
      rule: 'p0#0',
      approval: { kind: 'k_one' },
    });
    expect(decide(toPolicySet(allowing), { tool: 't0', args: { a: 1 } }, who)).toMatchObject({
      decision: 'allow',
      rule: 'p0#default',
    });
    // Undecidable: it asks (fail closed), as an allow rule's confirm does.
    expect(decide(toPolicySet(allowing), { tool: 't0', args: {} }, who)).toMatchObject({
      decision: 'require_approval',
      rule: 'p0#0',
    });
    expect(decide(toPolicySet(denying), { tool: 't0', args: { a: 9 } }, who)).toMatchObject({
      decision: 'deny',
      rule: 'p0#default',
    });
  });

  it("a confirm-only rule asks about another rule's allow, and a deny or abort rule still wins over it", () => {
    const gen = one({
      policy: 'p0',
      default: 'deny',
      rules: [
        { tools: ['t?'], allow: true },
        { tools: ['t0', 't1'], confirm: true, reason: 'needs a human' },
        { tools: ['t1'], allow: false },
      ],
    });
    for (const tool of ['t0', 't1', 't2']) compare(gen, { tool, args: {} }, who);
    const set = toPolicySet(gen);
    expect(decide(set, { tool: 't0', args: {} }, who)).toMatchObject({
      decision: 'require_approval',
      rule: 'p0#1',
      reason: 'needs a human',
    });
    expect(decide(set, { tool: 't1', args: {} }, who)).toMatchObject({ decision: 'deny', rule: 'p0#2' });
    expect(decide(set, { tool: 't2', args: {} }, who)).toMatchObject({ decision: 'allow', rule: 'p0#0' });
  });

  it('a confirm-only rule whose `when` cannot be decided still asks (it only restricts)', () => {
    const gen = one({ policy: 'p0', default: 'allow', rules: [{ tools: ['t0'], when: 'a > 5', confirm: true }] });
    compare(gen, { tool: 't0', args: {} }, who);
    compare(gen, { tool: 't0', args: { a: 1 } }, who);
    expect(decide(toPolicySet(gen), { tool: 't0', args: {} }, who)).toMatchObject({
      decision: 'require_approval',
      rule: 'p0#0',
    });
    expect(decide(toPolicySet(gen), { tool: 't0', args: { a: 1 } }, who)).toMatchObject({
      decision: 'allow',
      rule: 'p0#default',
    });
  });

  it('a scoped file gives no answer for a call it does not select, not even its default', () => {
    const gen: GenSet = {
      env: null,
      files: [
        {
          name: 'p00.json',
          doc: {
            policy: 'p0',
            default: 'allow',
            tools: { t0: { kind: 'remote_mutation' }, t1: { kind: 'remote_mutation' } },
          },
        },
        {
          name: 'p01.json',
          doc: {
            policy: 'p1',
            scope: { tools: ['t1'], teams: ['team1'] },
            default: 'deny',
            rules: [{ tools: ['t1'], allow: true }, { confirm: true }],
          },
        },
      ],
    };
    const member: Identity = { ...who, team: 'team1' };
    for (const [tool, caller] of [
      ['t0', who],
      ['t0', member],
      ['t1', who],
      ['t1', member],
    ] as const) {
      compare(gen, { tool, args: {} }, caller);
    }
    const set = toPolicySet(gen);
    // Unscoped, p1's default would deny t0, and its confirm-only rule would ask about everything.
    expect(decide(set, { tool: 't0', args: {} }, member)).toMatchObject({ decision: 'allow', rule: 'p0#default' });
    expect(decide(set, { tool: 't1', args: {} }, who)).toMatchObject({ decision: 'allow', rule: 'p0#default' });
    expect(decide(set, { tool: 't1', args: {} }, member)).toMatchObject({ decision: 'require_approval', rule: 'p1#1' });
  });

  it('when every file is scoped out, the built-in side_effects default answers (fail closed)', () => {
    const gen: GenSet = {
      env: null,
      files: [
        {
          name: 'p00.json',
          doc: {
            policy: 'p0',
            scope: { tools: ['t1'] },
            default: 'allow',
            tools: { t0: { kind: 'read_only' }, ax: { kind: 'destructive' } },
          },
        },
        { name: 'p01.json', doc: { policy: 'p1', scope: { users: ['u2'] }, default: 'allow' } },
      ],
    };
    for (const tool of ['t0', 'ax', 'zz', 't1']) compare(gen, { tool, args: {} }, who);
    const set = toPolicySet(gen);
    expect(decide(set, { tool: 't0', args: {} }, who)).toMatchObject({ decision: 'allow', rule: 'builtin#default' });
    expect(decide(set, { tool: 'ax', args: {} }, who)).toMatchObject({ decision: 'deny', rule: 'builtin#default' });
    expect(decide(set, { tool: 'zz', args: {} }, who)).toMatchObject({ decision: 'deny', rule: 'builtin#default' });
    expect(decide(set, { tool: 't1', args: {} }, who)).toMatchObject({ decision: 'allow', rule: 'p0#default' });
  });

  it("a scope's kinds are matched against every description: the file answers under those it selects", () => {
    const gen: GenSet = {
      env: null,
      files: [
        { name: 'p00.json', doc: { policy: 'p0', default: 'allow', tools: { t0: { kind: 'read_only' } } } },
        {
          name: 'p01.json',
          doc: {
            policy: 'p1',
            scope: { kinds: ['destructive'] },
            default: 'deny',
            tools: { 't?': { kind: 'destructive' } },
          },
        },
      ],
    };
    for (const tool of ['t0', 't1', 'ax']) compare(gen, { tool, args: {} }, who);
    const set = toPolicySet(gen);
    // t0 is read_only to p0 and destructive to p1: p1 answers under the destructive descriptions.
    expect(decide(set, { tool: 't0', args: {} }, who)).toMatchObject({ decision: 'deny', rule: 'p1#default' });
    expect(decide(set, { tool: 'ax', args: {} }, who)).toMatchObject({ decision: 'allow', rule: 'p0#default' });
  });

  it('among equally severe files the first in file-name order gives the rule, whatever the input order', () => {
    const gen: GenSet = {
      env: null,
      files: [
        { name: 'p01.json', doc: { policy: 'p1', default: 'deny' } },
        { name: 'p00.json', doc: { policy: 'p0', default: 'deny' } },
      ],
    };
    compare(gen, { tool: 't0', args: {} }, who);
    expect(decide(toPolicySet(gen), { tool: 't0', args: {} }, who).rule).toBe('p0#default');
  });
});
