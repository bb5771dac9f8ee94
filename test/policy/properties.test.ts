// Property tests of decide() (the properties Cedar proves of its evaluator, checked here): deny wins,
// composition never loosens, monotonicity, totality, the side_effects "never" check, order and
// duplicate independence, and no argument value in any text the model reads.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/json/value.js';
import { on } from '../helpers/condition.js';
import { compileCondition } from '../../src/policy/condition/compile.js';
import { decide, explain } from '../../src/policy/decide.js';
import { compileGlob } from '../../src/policy/glob.js';
import { SEVERITY, type DecideRequest, type DecisionResult, type Identity } from '../../src/policy/model.js';
import {
  CONDITIONS,
  PII,
  identityArb,
  requestArb,
  ruleArb,
  setArb,
  toPolicySet,
  type GenDoc,
  type GenFile,
  type GenRule,
  type GenSet,
} from '../helpers/policy-gen.js';
import { runs } from '../helpers/runs.js';

const DECISIONS = ['allow', 'require_approval', 'deny', 'abort'];
const sev = (d: DecisionResult): number => SEVERITY[d.decision];
const pairsArb = (max = 4) => fc.array(fc.tuple(requestArb(), identityArb), { minLength: 1, maxLength: max });

/**
 * A copy of the set with `rule` inserted at `pos` (modulo) in file `fileIx` (modulo); with `unscoped`,
 * that file also loses its `scope`, so that it is consulted for every call.
 */
function withRule(gen: GenSet, fileIx: number, pos: number, rule: GenRule, unscoped = false): GenSet {
  const k = fileIx % gen.files.length;
  return {
    env: gen.env,
    files: gen.files.map((f, i) => {
      if (i !== k) return f;
      const rules = [...(f.doc.rules ?? [])];
      rules.splice(pos % (rules.length + 1), 0, rule);
      const { scope: _scope, ...rest } = f.doc;
      return { name: f.name, doc: { ...(unscoped ? rest : f.doc), rules } };
    }),
  };
}

/** Rules may carry `envs` only in files that declare environments. */
function fitRule(rule: GenRule, doc: GenDoc): GenRule {
  if (doc.environments !== undefined || rule.envs === undefined) return rule;
  const { envs: _drop, ...rest } = rule;
  return rest;
}

describe('deny wins (Cedar forbid_trumps_permit)', () => {
  it('an applying allow: false or abort: true in any file consulted makes the answer deny or abort', () => {
    const denyArb = fc.record({
      effect: fc.constantFrom('deny', 'abort'),
      select: fc.constantFrom('exact', 'star', 'none', 'user'),
      condition: fc.option(fc.constantFrom(...CONDITIONS), { nil: undefined }),
      fileIx: fc.nat(),
      pos: fc.nat(),
    });
    fc.assert(
      fc.property(setArb({ minFiles: 1 }), requestArb(), identityArb, denyArb, (gen, req, who, d) => {
        const rule: GenRule = { id: 'injected' };
        if (d.select === 'exact') rule.tools = [req.tool];
        if (d.select === 'star') rule.tools = ['*'];
        if (d.select === 'user') rule.users = [who.user];
        // A `when` that holds, or cannot be decided (then a restricting rule applies too).
        if (d.condition !== undefined && compileCondition(d.condition).evaluate(on(req.args)) !== false)
          rule.when = d.condition;
        if (d.effect === 'abort') rule.abort = true;
        else rule.allow = false;
        // In a file without a scope: a scoped file that does not select the call gives no answer at all.
        const got = decide(toPolicySet(withRule(gen, d.fileIx, d.pos, rule, true)), req, who);
        expect(['deny', 'abort']).toContain(got.decision);
        if (d.effect === 'abort' && !got.schemaRefused) expect(got.decision).toBe('abort');
      }),
      { numRuns: runs(400) },
    );
  });
});

describe('composition: adding a file never loosens a decision', () => {
  /**
   * Split off the first or the last file (in file-name order) as F. F keeps its catalogue entries for
   * tools the other files already describe (a second description must not loosen anything); it loses
   * those naming a requested tool nobody else catalogues (the one documented exception, below).
   */
  function split(gen: GenSet, at: 'first' | 'last', tools: readonly string[]): { without: GenSet; with: GenSet } {
    const ix = at === 'first' ? 0 : gen.files.length - 1;
    const f = gen.files[ix]!;
    const others = gen.files.filter((_, i) => i !== ix);
    const without: GenSet = { env: gen.env, files: others };
    const known = toPolicySet(without);
    const unknown = tools.filter((t) => known.plan(t).entries.length === 0);
    const tools2 = Object.fromEntries(
      Object.entries(f.doc.tools ?? {}).filter(([p]) => !unknown.some((t) => compileGlob(p).test(t))),
    );
    const { tools: _drop, ...rest } = f.doc;
    const F: GenFile = { name: f.name, doc: Object.keys(tools2).length > 0 ? { ...rest, tools: tools2 } : rest };
    return { without, with: { env: gen.env, files: at === 'first' ? [F, ...others] : [...others, F] } };
  }

  for (const at of ['last', 'first'] as const) {
    it(`severity(S ∪ F) >= severity(S) with F ${at === 'last' ? 'AFTER' : 'BEFORE'} S in file-name order`, () => {
      fc.assert(
        fc.property(setArb({ minFiles: 2, maxFiles: 4 }), pairsArb(), (gen, pairs) => {
          const { without, with: both } = split(
            gen,
            at,
            pairs.map(([r]) => r.tool),
          );
          const s = toPolicySet(without);
          const sf = toPolicySet(both);
          for (const [req, who] of pairs) {
            const a = decide(s, req, who);
            // When no file of S answers (every one scoped out), the built-in default stands in for an
            // empty set, and a first answering file may loosen it as a first file in an empty
            // directory does (the exception below).
            if (a.rule === 'builtin#default') continue;
            const b = decide(sf, req, who);
            expect(sev(b), `${a.decision} (${a.rule}) became ${b.decision} (${b.rule})`).toBeGreaterThanOrEqual(sev(a));
          }
        }),
        { numRuns: runs(300) },
      );
    });
  }

  it('the exception: a file added where no file answered replaces the built-in default', () => {
    const who: Identity = { user: 'u1', team: null, agent: null, roles: [] };
    const s: GenSet = {
      env: null,
      files: [{ name: 'p00.json', doc: { policy: 'p0', scope: { tools: ['t1'] }, default: 'deny' } }],
    };
    const sf: GenSet = {
      env: null,
      files: [...s.files, { name: 'p01.json', doc: { policy: 'p1', default: 'allow' } }],
    };
    expect(decide(toPolicySet(s), { tool: 't0', args: {} }, who)).toMatchObject({
      decision: 'deny',
      rule: 'builtin#default',
    });
    expect(decide(toPolicySet(sf), { tool: 't0', args: {} }, who)).toMatchObject({
      decision: 'allow',
      rule: 'p1#default',
    });
    // Where a file of S answers, the added file can only tighten.
    expect(decide(toPolicySet(sf), { tool: 't1', args: {} }, who)).toMatchObject({
      decision: 'deny',
      rule: 'p0#default',
    });
  });

  it('the one exception is documented: a catalogue entry in an added file can name an unknown tool', () => {
    // Not a loosening of decisions but of the catalogue (docs/spec.md: the catalogue is the union of every
    // file's tools): a tool nobody catalogued is denied; once catalogued read_only, it is allowed.
    const who: Identity = { user: 'u1', team: null, agent: null, roles: [] };
    const s: GenSet = { env: null, files: [{ name: 'p00.json', doc: { policy: 'p0' } }] };
    const sf: GenSet = {
      env: null,
      files: [...s.files, { name: 'p01.json', doc: { policy: 'p1', tools: { t0: { kind: 'read_only' } } } }],
    };
    expect(decide(toPolicySet(s), { tool: 't0', args: {} }, who).decision).toBe('deny');
    expect(decide(toPolicySet(sf), { tool: 't0', args: {} }, who).decision).toBe('allow');
  });
});

describe('monotonicity (Cedar unchanged_deny_when_add_forbid)', () => {
  const placed = fc.record({ fileIx: fc.nat(), pos: fc.nat() });

  it('adding a deny or abort rule to a file never gives a less severe answer', () => {
    fc.assert(
      fc.property(
        setArb({ minFiles: 1 }),
        pairsArb(),
        ruleArb(true, ['deny', 'abort']),
        placed,
        (gen, pairs, rule, p) => {
          const target = gen.files[p.fileIx % gen.files.length]!.doc;
          const more = withRule(gen, p.fileIx, p.pos, { ...fitRule(rule, target), id: 'added-rule' });
          const s = toPolicySet(gen);
          const s2 = toPolicySet(more);
          for (const [req, who] of pairs)
            expect(sev(decide(s2, req, who))).toBeGreaterThanOrEqual(sev(decide(s, req, who)));
        },
      ),
      { numRuns: runs(300) },
    );
  });

  it('adding an allow rule without confirm to a file never gives a more severe answer', () => {
    fc.assert(
      fc.property(setArb({ minFiles: 1 }), pairsArb(), ruleArb(true, ['allow']), placed, (gen, pairs, rule, p) => {
        const target = gen.files[p.fileIx % gen.files.length]!.doc;
        const { confirm: _c, approval: _a, ...plain } = fitRule(rule, target);
        const more = withRule(gen, p.fileIx, p.pos, { ...plain, id: 'added-rule' });
        const s = toPolicySet(gen);
        const s2 = toPolicySet(more);
        for (const [req, who] of pairs) expect(sev(decide(s2, req, who))).toBeLessThanOrEqual(sev(decide(s, req, who)));
      }),
      { numRuns: runs(300) },
    );
  });
});

describe('confirm-only rules only ever add an approval', () => {
  const placed = fc.record({ fileIx: fc.nat(), pos: fc.nat() });

  it('adding one to a file changes an answer only from allow to require_approval (never loosens, never touches deny or abort)', () => {
    fc.assert(
      fc.property(setArb({ minFiles: 1 }), pairsArb(), ruleArb(true, ['confirm']), placed, (gen, pairs, rule, p) => {
        const target = gen.files[p.fileIx % gen.files.length]!.doc;
        expect(rule.allow === undefined && rule.abort === undefined && rule.confirm !== undefined).toBe(true);
        const more = withRule(gen, p.fileIx, p.pos, { ...fitRule(rule, target), id: 'added-rule' });
        const s = toPolicySet(gen);
        const s2 = toPolicySet(more);
        for (const [req, who] of pairs) {
          const before = decide(s, req, who);
          const after = decide(s2, req, who);
          if (after.decision !== before.decision)
            expect([before.decision, after.decision]).toEqual(['allow', 'require_approval']);
        }
      }),
      { numRuns: runs(300) },
    );
  });

  it('a file whose rules are all confirm-only never allows what its default does not', () => {
    fc.assert(
      fc.property(
        fc.array(ruleArb(false, ['confirm']), { minLength: 1, maxLength: 4 }),
        fc.constantFrom('deny' as const, 'side_effects' as const),
        pairsArb(),
        (generated, def, pairs) => {
          const rules = generated.map((r, i) => (r.id === undefined ? r : { ...r, id: `r${i}` }));
          const set = toPolicySet({
            env: null,
            files: [{ name: 'p00.json', doc: { policy: 'p0', default: def, rules } }],
          });
          const bare = toPolicySet({ env: null, files: [{ name: 'p00.json', doc: { policy: 'p0', default: def } }] });
          for (const [req, who] of pairs) {
            const got = decide(set, req, who);
            if (got.decision === 'allow') expect(decide(bare, req, who).decision).toBe('allow');
            if (decide(bare, req, who).decision !== 'allow')
              expect(got).toMatchObject({ decision: decide(bare, req, who).decision, rule: 'p0#default' });
          }
        },
      ),
      { numRuns: runs(200) },
    );
  });
});

describe('scope', () => {
  it('a file whose scope leaves the call out changes nothing: the other files decide as they would without it', () => {
    fc.assert(
      fc.property(setArb({ minFiles: 2, maxFiles: 4 }), fc.nat(), pairsArb(), (gen, k, pairs) => {
        const ix = k % gen.files.length;
        fc.pre(gen.files[ix]!.doc.scope !== undefined);
        // F keeps its catalogue: the catalogue is the union of every file's, scoped or not (docs/spec.md section 2.3).
        const { rules: _r, guards: _g, limits: _l, default: _d, scope: _s, ...kept } = gen.files[ix]!.doc;
        const withoutAnswers: GenSet = {
          env: gen.env,
          files: gen.files.map((f, i) =>
            i === ix ? { name: f.name, doc: { ...kept, scope: { tools: ['zz-none'] } } } : f,
          ),
        };
        const s = toPolicySet(gen);
        const s2 = toPolicySet(withoutAnswers);
        for (const [req, who] of pairs) {
          const { trace } = explain(s, req, who);
          const fTrace = trace.files.find((f) => f.policy === gen.files[ix]!.doc.policy);
          if (fTrace === undefined || fTrace.decision !== undefined) continue; // schema refusal, or F answered
          const a = decide(s, req, who);
          const b = decide(s2, req, who);
          expect([a.decision, a.rule, a.approval?.hash]).toEqual([b.decision, b.rule, b.approval?.hash]);
        }
      }),
      { numRuns: runs(300) },
    );
  });
});

describe('totality', () => {
  function wellFormed(set: ReturnType<typeof toPolicySet>, d: DecisionResult): void {
    expect(DECISIONS).toContain(d.decision);
    expect(typeof d.reason).toBe('string');
    expect(d.reason.length).toBeGreaterThan(0);
    expect(d.rule.length).toBeGreaterThan(0);
    expect(d.message.length).toBeGreaterThan(0);
    expect(d.policies).toEqual(set.identities);
    expect(d.internalError).toBeUndefined();
    if (d.decision === 'require_approval') {
      expect(d.approval?.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(d.approval?.kind.length).toBeGreaterThan(0);
      expect(d.approval?.capability).toBeTypeOf('object');
      expect(d.approval?.presentation).toBeTypeOf('object');
    } else {
      expect(d.approval).toBeUndefined();
    }
  }

  it('every (policy, request) gets exactly one decision with a reason, rule and message; approval iff require_approval', () => {
    fc.assert(
      fc.property(setArb(), pairsArb(6), (gen, pairs) => {
        const set = toPolicySet(gen);
        for (const [req, who] of pairs) wellFormed(set, decide(set, req, who));
      }),
      { numRuns: runs(400) },
    );
  });

  it('arbitrary tool names and arbitrary JSON arguments never make decide throw', () => {
    const wild = fc.record({
      tool: fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('t0', 'g_a', 'ax')),
      args: fc.dictionary(
        fc.oneof(fc.constantFrom('a', 'b', 'c', 'x', 'items', '__proto__', 'constructor'), fc.string({ maxLength: 6 })),
        fc.jsonValue({ maxDepth: 3 }),
        { maxKeys: 6 },
      ),
      steps: fc.nat(8),
    });
    fc.assert(
      fc.property(
        setArb({ maxFiles: 2 }),
        fc.array(fc.tuple(wild, identityArb), { minLength: 1, maxLength: 5 }),
        (gen, reqs) => {
          const set = toPolicySet(gen);
          for (const [w, who] of reqs) {
            const req: DecideRequest = {
              tool: w.tool,
              args: w.args as JsonObject,
              run: { steps: Array.from({ length: w.steps }, () => ({ tool: 't0' })) },
            };
            wellFormed(set, decide(set, req, who));
          }
        },
      ),
      { numRuns: runs(300) },
    );
  });
});

describe('the "never" check: the side_effects default', () => {
  // Files with only catalogues, guards and limits (no rules), default side_effects (written or not).
  const fileArb = (i: number) =>
    fc
      .record({
        written: fc.boolean(),
        tools: fc.subarray(['d0', 'd1', 'd_*', 'r0', 'm0', 'l0'], { minLength: 0 }),
        confirm: fc.boolean(),
        guard: fc.option(fc.constantFrom('deny', 'require_approval'), { nil: undefined }),
        maxCalls: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
      })
      .map(({ written, tools, confirm, guard, maxCalls }): GenFile => {
        const doc: GenDoc = { policy: `p${i}` };
        if (written) doc.default = 'side_effects';
        const kinds = {
          d0: 'destructive',
          d1: 'destructive',
          'd_*': 'destructive',
          r0: 'read_only',
          m0: 'remote_mutation',
          l0: 'local_mutation',
        } as const;
        // Each name in at most one file: file i keeps the names whose index is i modulo the file count (below).
        doc.tools = Object.fromEntries(
          tools.map((t) => [
            t,
            { kind: kinds[t as keyof typeof kinds], ...(confirm ? { confirm: true as const } : {}) },
          ]),
        );
        if (guard !== undefined) doc.guards = [{ guard: 'pii', action: guard as 'deny' | 'require_approval' }];
        if (maxCalls !== undefined) doc.limits = { max_calls: maxCalls };
        return { name: `p${String(i).padStart(2, '0')}.json`, doc };
      });
  const setOf = fc
    .integer({ min: 1, max: 3 })
    .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => fileArb(i))))
    .map((files): GenSet => {
      const seen = new Set<string>();
      for (const f of files) {
        for (const name of Object.keys(f.doc.tools ?? {})) {
          if (seen.has(name)) delete f.doc.tools![name];
          seen.add(name);
        }
      }
      return { env: null, files };
    });
  const toolArb = fc.oneof(fc.constantFrom('d0', 'd1', 'd_x', 'd_'), fc.stringMatching(/^u[a-z0-9_]{0,8}$/));
  const argsArb = fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 });

  it('a destructive or unknown tool is never allowed (nor sent for approval) over generated arguments', () => {
    fc.assert(
      fc.property(
        setOf,
        toolArb,
        fc.array(argsArb, { minLength: 1, maxLength: 5 }),
        identityArb,
        fc.nat(5),
        (gen, tool, argsList, who, steps) => {
          const set = toPolicySet(gen);
          for (const args of argsList) {
            const d = decide(
              set,
              { tool, args: args as JsonObject, run: { steps: Array.from({ length: steps }, () => ({ tool })) } },
              who,
            );
            expect(['deny', 'abort']).toContain(d.decision);
          }
        },
      ),
      { numRuns: runs(400) },
    );
  });
});

describe('order and duplicate independence (Cedar order_and_dup_independent)', () => {
  const keysArb = fc.array(fc.array(fc.nat(1000), { minLength: 8, maxLength: 8 }), { minLength: 4, maxLength: 4 });
  const permute = <T>(items: readonly T[] | undefined, keys: readonly number[]): T[] | undefined =>
    items === undefined
      ? undefined
      : items
          .map((x, i) => [keys[i] ?? 0, i, x] as const)
          .sort((p, q) => p[0] - q[0] || p[1] - q[1])
          .map((t) => t[2]);

  it('shuffling the rules (and guards) inside each file never changes the decision', () => {
    fc.assert(
      fc.property(setArb({ minFiles: 1 }), pairsArb(), keysArb, (gen, pairs, keys) => {
        const shuffled: GenSet = {
          env: gen.env,
          files: gen.files.map((f, i) => {
            const doc: GenDoc = { ...f.doc };
            if (doc.rules) doc.rules = permute(doc.rules, keys[i]!);
            if (doc.guards) doc.guards = permute(doc.guards, [...keys[i]!].reverse());
            return { name: f.name, doc };
          }),
        };
        const s = toPolicySet(gen);
        const s2 = toPolicySet(shuffled);
        for (const [req, who] of pairs) expect(decide(s2, req, who).decision).toBe(decide(s, req, who).decision);
      }),
      { numRuns: runs(300) },
    );
  });

  it('duplicating a rule inside a file never changes the decision', () => {
    fc.assert(
      fc.property(
        setArb({ minFiles: 1 }),
        pairsArb(),
        fc.nat(),
        fc.nat(),
        fc.nat(),
        (gen, pairs, fileIx, which, pos) => {
          const doc = gen.files[fileIx % gen.files.length]!.doc;
          const rules = doc.rules ?? [];
          fc.pre(rules.length > 0);
          const rule = rules[which % rules.length]!;
          const copy: GenRule = rule.id === undefined ? { ...rule } : { ...rule, id: `${rule.id}-copy` };
          const s = toPolicySet(gen);
          const s2 = toPolicySet(withRule(gen, fileIx, pos, copy));
          for (const [req, who] of pairs) expect(decide(s2, req, who).decision).toBe(decide(s, req, who).decision);
        },
      ),
      { numRuns: runs(300) },
    );
  });

  it('duplicating a file (same rules, guards, limits and default; no catalogue) never changes the decision', () => {
    fc.assert(
      fc.property(setArb({ minFiles: 1 }), pairsArb(), fc.nat(), fc.boolean(), (gen, pairs, fileIx, before) => {
        const f = gen.files[fileIx % gen.files.length]!;
        const { tools: _t, ...rest } = f.doc;
        const doc: GenDoc = {
          ...rest,
          policy: `${f.doc.policy}-copy`,
          ...(rest.rules
            ? { rules: rest.rules.map((r) => (r.id === undefined ? r : { ...r, id: `${r.id}-copy` })) }
            : {}),
          ...(rest.guards
            ? { guards: rest.guards.map((g) => (g.id === undefined ? g : { ...g, id: `${g.id}-copy` })) }
            : {}),
        };
        const more: GenSet = {
          env: gen.env,
          files: [...gen.files, { name: before ? 'a-copy.json' : 'z-copy.json', doc }],
        };
        const s = toPolicySet(gen);
        const s2 = toPolicySet(more);
        for (const [req, who] of pairs) expect(decide(s2, req, who).decision).toBe(decide(s, req, who).decision);
      }),
      { numRuns: runs(300) },
    );
  });
});

describe('reason and message never contain an argument value (docs/spec.md section 5)', () => {
  const valueArb = fc.stringMatching(/^[0-9a-f]{6,12}$/).map((h) => `VALUE-${h}`);

  function noValue(d: DecisionResult): void {
    for (const text of [d.reason, d.message]) {
      expect(text).not.toContain('VALUE-');
      expect(text).not.toContain(PII);
      expect(text).not.toContain('jane');
    }
  }

  it('on random sets, with distinctive string values in the arguments', () => {
    fc.assert(
      fc.property(
        setArb(),
        fc.array(fc.tuple(requestArb(valueArb), identityArb), { minLength: 1, maxLength: 6 }),
        (gen, pairs) => {
          const set = toPolicySet(gen);
          for (const [req, who] of pairs) noValue(decide(set, req, who));
        },
      ),
      { numRuns: runs(300) },
    );
  });

  it('on random sets with argument schemas (schema refusals name the path, not the value)', () => {
    fc.assert(
      fc.property(
        setArb({ minFiles: 1, schemaP: 0.6 }),
        fc.array(fc.tuple(requestArb(valueArb), identityArb), { minLength: 1, maxLength: 8 }),
        (gen, pairs) => {
          const set = toPolicySet(gen);
          for (const [req, who] of pairs) noValue(decide(set, req, who));
        },
      ),
      { numRuns: runs(40) },
    );
  });

  it('pii findings name the path only, and of it only the keys a schema declares', () => {
    const who = { user: 'u1', team: null, agent: null, roles: [] };
    const undeclared = toPolicySet({
      env: null,
      files: [{ name: 'p00.json', doc: { policy: 'p0', default: 'allow', guards: [{ guard: 'pii' }] } }],
    });
    const d = decide(undeclared, { tool: 't0', args: { note: `VALUE-1 ${PII}` } }, who);
    expect(d.decision).toBe('deny');
    expect(d.reason).toBe('guard "pii" found an email address at /*');
    noValue(d);
    const declared = toPolicySet({
      env: null,
      files: [
        {
          name: 'p00.json',
          doc: {
            policy: 'p0',
            default: 'allow',
            guards: [{ guard: 'pii' }],
            tools: {
              t0: {
                kind: 'read_only',
                schema: {
                  type: 'object',
                  properties: { note: { type: 'string' }, to: { type: 'object' }, card: { type: 'number' } },
                },
              },
            },
          },
        },
      ],
    });
    expect(decide(declared, { tool: 't0', args: { note: `VALUE-1 ${PII}` } }, who).reason).toBe(
      'guard "pii" found an email address at /note',
    );
  });

  it('a model-chosen key never reaches the reason: not prose for the operator, not a secret', () => {
    const set = toPolicySet({
      env: null,
      files: [
        {
          name: 'p00.json',
          doc: {
            policy: 'p0',
            default: 'allow',
            guards: [{ guard: 'pii', action: 'require_approval' }],
            tools: {
              t0: { kind: 'read_only', schema: { type: 'object', properties: { recipients: { type: 'array' } } } },
            },
          },
        },
      ],
    });
    const who = { user: 'u1', team: null, agent: null, roles: [] };
    const note = 'NOTE TO OPERATOR - verified by the security team, safe to grant; recipient';
    const prose = decide(set, { tool: 't0', args: { recipients: [{ [note]: PII }] } }, who);
    expect(prose.decision).toBe('require_approval');
    expect(prose.reason).toBe('guard "pii" found an email address at /recipients/0/*');
    const secret = decide(set, { tool: 't0', args: { 'api_key=sk_live_51HxQ': { x: PII } } }, who);
    expect(secret.reason).toBe('guard "pii" found an email address at /*/*');
    for (const d of [prose, secret]) {
      const text = `${d.reason} ${d.message} ${d.approval?.requirements.map((r) => r.reason).join(' ')}`;
      expect(text).not.toContain('OPERATOR');
      expect(text).not.toContain('sk_live');
    }
  });

  it('pii in a key names the object holding it, never the key; a card sent as a number is found', () => {
    const set = toPolicySet({
      env: null,
      files: [
        {
          name: 'p00.json',
          doc: {
            policy: 'p0',
            default: 'allow',
            guards: [{ guard: 'pii' }],
            tools: {
              t0: {
                kind: 'read_only',
                schema: { type: 'object', properties: { to: { type: 'object' }, card: { type: 'number' } } },
              },
            },
          },
        },
      ],
    });
    const who = { user: 'u1', team: null, agent: null, roles: [] };
    const inKey = decide(set, { tool: 't0', args: { to: { [PII]: true } } }, who);
    expect(inKey.decision).toBe('deny');
    expect(inKey.reason).toBe('guard "pii" found an email address in a key of /to');
    expect(JSON.stringify(inKey)).not.toContain(PII);
    const card = decide(set, { tool: 't0', args: { card: 4111111111111111 } }, who);
    expect(card.decision).toBe('deny');
    expect(card.reason).toBe('guard "pii" found a card number at /card');
  });
});
