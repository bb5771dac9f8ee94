// explain() and decide() share one evaluator (docs/spec.md section 5, POST /explain): the same decision, rule,
// reason and approval on random sets and requests, plus the shape of the trace on the shipped
// example policies: every rule of every file, its selectors with why, when/confirm truth with why,
// applies (including restricts_only), guard findings, limits, the catalogue entry and schema status.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/json/value.js';
import { decide, explain, type ExplainResult, type RuleTrace } from '../../src/policy/decide.js';
import { buildPolicySet, loadPolicies } from '../../src/policy/load.js';
import { SEVERITY, type Identity, type PolicySet } from '../../src/policy/model.js';
import { PII, identityArb, requestArb, setArb, toPolicySet } from '../helpers/policy-gen.js';
import { runs } from '../helpers/runs.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('explain() gives what decide() gives', () => {
  it('decision, rule, reason, message, policies and approval are equal on random sets and requests', () => {
    fc.assert(
      fc.property(
        setArb(),
        fc.array(fc.tuple(requestArb(), identityArb), { minLength: 1, maxLength: 6 }),
        (gen, pairs) => {
          const set = toPolicySet(gen);
          for (const [req, who] of pairs) {
            const { trace, ...ex } = explain(set, req, who);
            expect(ex).toEqual(decide(set, req, who));
            expect(trace.tool).toBe(req.tool);
          }
        },
      ),
      { numRuns: runs(400) },
    );
  });

  it('the trace is complete and consistent: one entry per file and per rule, and the files combine to the answer', () => {
    const valueArb = fc.stringMatching(/^[0-9a-f]{6,10}$/).map((h) => `VALUE-${h}`);
    fc.assert(
      fc.property(
        setArb({ schemaP: 0.1 }),
        fc.array(fc.tuple(requestArb(valueArb), identityArb), { minLength: 1, maxLength: 6 }),
        (gen, pairs) => {
          const set = toPolicySet(gen);
          for (const [req, who] of pairs) {
            const ex = explain(set, req, who);
            const { trace } = ex;
            if (trace.schema === 'failed') {
              // Step 2 stops before any file is consulted.
              expect(ex.decision).toBe('deny');
              expect(ex.schemaRefused).toBe(true);
              expect(trace.files).toEqual([]);
              continue;
            }
            // Every file, then the built-in default when no file answered (none loaded, or every one scoped out).
            const builtin = { identity: { policy: 'builtin' }, rules: [], guards: [] };
            const someFileAnswered = trace.files.slice(0, set.files.length).some((f) => f.decision !== undefined);
            const files = someFileAnswered ? set.files : [...set.files, builtin];
            expect(trace.files.map((f) => f.policy)).toEqual(files.map((f) => f.identity.policy));
            trace.files.forEach((ft, i) => {
              if (ft.decision === undefined) {
                // Scoped out: its scope says why, and none of its rules or guards was consulted.
                expect(ft.scope?.some((s) => !s.matched)).toBe(true);
                expect([ft.rules, ft.guards, ft.reason, ft.rule]).toEqual([[], [], undefined, undefined]);
                return;
              }
              if (ft.scope) expect(ft.scope.every((s) => s.matched)).toBe(true);
              expect(ft.rules.map((r) => r.id)).toEqual(files[i]!.rules.map((r) => r.id));
              expect(ft.guards.map((g) => g.id)).toEqual(files[i]!.guards.map((g) => g.id));
              for (const rt of ft.rules) {
                // A rule applies only if every selector matched.
                if (rt.applies !== 'no') expect(rt.selectors.every((s) => s.matched)).toBe(true);
                for (const s of rt.selectors)
                  expect(s.why).toMatch(
                    s.selector === 'users' ? /^the user is (not )?among the \d+ users? listed$/ : / is (not )?in \[/,
                  );
              }
            });
            // The most severe answering file decides; among equals the first in load order gives rule and reason.
            const answers = trace.files.filter((f) => f.decision !== undefined);
            const top = Math.max(...answers.map((f) => SEVERITY[f.decision!]));
            const first = answers.find((f) => SEVERITY[f.decision!] === top)!;
            expect(ex.decision).toBe(first.decision);
            expect(ex.rule).toBe(first.rule);
            expect(ex.reason).toBe(first.reason);
            // An allowed answer: no file had an applying deny or abort rule (Cedar: allowed only if permitted).
            if (ex.decision === 'allow') {
              for (const ft of trace.files)
                for (const rt of ft.rules)
                  if (rt.effect === 'deny' || rt.effect === 'abort') expect(rt.applies).toBe('no');
            }
            // No argument value anywhere in the trace.
            const text = JSON.stringify(trace);
            expect(text).not.toContain('VALUE-');
            expect(text).not.toContain(PII);
          }
        },
      ),
      { numRuns: runs(200) },
    );
  });
});

describe('the trace on the example policies (a copy in test/cases/payments, env prod)', () => {
  const support: Identity = { user: 'u1', team: 'support', agent: null, roles: [] };
  const load = (): Promise<PolicySet> => loadPolicies('test/cases/payments', { env: 'prod' });
  const ruleOf = (ex: ExplainResult, id: string): RuleTrace => {
    const rt = ex.trace.files.flatMap((f) => f.rules).find((r) => r.id === id);
    expect(rt, `rule ${id} in the trace`).toBeDefined();
    return rt!;
  };

  it('every rule and guard of every file appears, in order, with every selector it gives and a why', async () => {
    const set = await load();
    const requests: [string, JsonObject][] = [
      ['refund', { order: 'A1', amount: 5 }],
      ['send_note', { text: 'hi' }],
      ['wipe_orders', {}],
      ['lookup_order', {}],
      ['dispatch_vendor', { unitId: 'u', estimateUsd: 5 }],
      ['github__issue', {}],
      ['nobody_knows', {}],
    ];
    for (const [tool, args] of requests) {
      const ex = explain(set, { tool, args }, support);
      expect(ex.trace.schema).not.toBe('failed');
      expect(ex.trace.files).toHaveLength(set.files.length);
      ex.trace.files.forEach((ft, i) => {
        const file = set.files[i]!;
        expect(ft.policy).toBe(file.identity.policy);
        expect(ft.version).toBe(file.identity.version);
        expect(ft.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
        expect(ft.default).toBe(file.defaultMode);
        expect(ft.rules.map((r) => r.id)).toEqual(file.rules.map((r) => r.id));
        ft.rules.forEach((rt, k) => {
          const rule = file.rules[k]!;
          expect(rt.effect).toBe(rule.effect);
          expect(rt.selectors.map((s) => s.selector)).toEqual(
            ['tools', 'kinds', 'tags', 'envs', 'teams', 'users', 'agents'].filter(
              (n) => rule.selectors[n as keyof typeof rule.selectors] !== undefined,
            ),
          );
          for (const s of rt.selectors) expect(s.why).toMatch(s.matched ? / is in \[/ : / is not in \[/);
          expect(['yes', 'no', 'restricts_only']).toContain(rt.applies);
          if (rule.when) expect(rt.when).toMatchObject({ truth: expect.anything(), why: expect.any(String) });
          else expect(rt.when).toBeUndefined();
        });
        expect(ft.guards.map((g) => g.id)).toEqual(file.guards.map((g) => g.id));
        if (file.maxCalls !== undefined) expect(ft.limits).toEqual({ max_calls: file.maxCalls, steps: 0 });
      });
    }
  });

  it('a refund over 100 by support: catalogue, schema passed, selectors, confirm truth and why', async () => {
    const ex = explain(
      await load(),
      { tool: 'refund', args: { order: 'A1', amount: 150 }, run: { steps: [{ tool: 'lookup_order' }] } },
      support,
    );
    expect(ex.decision).toBe('require_approval');
    expect(ex.rule).toBe('refund-support');
    expect(ex.trace.catalogue).toEqual({
      entry: 'refund',
      policy: 'payments',
      kind: 'remote_mutation',
      tags: ['money'],
    });
    expect(ex.trace.schema).toBe('passed');
    const rt = ruleOf(ex, 'refund-support');
    expect(rt.selectors).toEqual([
      { selector: 'tools', matched: true, why: 'tool "refund" is in [refund]' },
      { selector: 'teams', matched: true, why: 'team support is in [support]' },
    ]);
    expect(rt.applies).toBe('yes');
    expect(rt.confirm).toEqual({ truth: true, why: 'amount > 100 is true' });
    const lookups = ruleOf(ex, 'lookups');
    expect(lookups.applies).toBe('no');
    expect(lookups.selectors[0]).toEqual({
      selector: 'tools',
      matched: false,
      why: 'tool "refund" is not in [lookup_*, send_note]',
    });
    expect(ex.trace.files[0]!.limits).toEqual({ max_calls: 200, steps: 1 });
    expect(ex.trace.files[0]!.guards[0]!.finding).toBe('not_run'); // its tools selector does not match
  });

  it('a refund of 50: confirm false; another team: the teams selector fails with its why', async () => {
    const set = await load();
    const small = explain(set, { tool: 'refund', args: { order: 'A1', amount: 50 } }, support);
    expect(ruleOf(small, 'refund-support').confirm).toEqual({ truth: false, why: 'amount > 100 is false' });
    expect(small.decision).toBe('allow');
    const other = explain(set, { tool: 'refund', args: { order: 'A1', amount: 50 } }, { ...support, team: 'sales' });
    const rt = ruleOf(other, 'refund-support');
    expect(rt.applies).toBe('no');
    expect(rt.selectors[1]).toEqual({ selector: 'teams', matched: false, why: 'team sales is not in [support]' });
    const none = explain(set, { tool: 'refund', args: { order: 'A1', amount: 50 } }, { ...support, team: null });
    expect(ruleOf(none, 'refund-support').selectors[1]).toEqual({
      selector: 'teams',
      matched: false,
      why: 'no team is not in [support]',
    });
  });

  it('arguments the schema refuses: schema failed, no file consulted', async () => {
    const ex = explain(await load(), { tool: 'refund', args: { order: 'A1', amount: '5' } }, support);
    expect(ex.decision).toBe('deny');
    expect(ex.schemaRefused).toBe(true);
    expect(ex.trace.schema).toBe('failed');
    expect(ex.trace.files).toEqual([]);
  });

  it('an unknown tool: no catalogue entry, kind unknown, schema none', async () => {
    const ex = explain(await load(), { tool: 'nobody_knows', args: {} }, support);
    expect(ex.trace.catalogue).toEqual({ entry: null, policy: null, kind: 'unknown', tags: [] });
    expect(ex.trace.schema).toBe('none');
    expect(ex.decision).toBe('deny');
    expect(ex.trace.files[0]!.rule).toBe('payments#default');
  });

  it('a glob catalogue entry is named by its pattern', async () => {
    const ex = explain(await load(), { tool: 'lookup_order', args: {} }, support);
    expect(ex.trace.catalogue).toEqual({ entry: 'lookup_*', policy: 'payments', kind: 'read_only', tags: [] });
    expect(ruleOf(ex, 'lookups').selectors[0]).toEqual({
      selector: 'tools',
      matched: true,
      why: 'tool "lookup_order" is in [lookup_*, send_note]',
    });
  });

  it('a when that holds on a deny rule, and kinds and envs selectors', async () => {
    const set = await load();
    const ex = explain(set, { tool: 'dispatch_vendor', args: { unitId: 'u', estimateUsd: 5000 } }, support);
    const cap = ruleOf(ex, 'vendor-hard-cap');
    expect(cap.when).toEqual({ truth: true, why: 'estimateUsd > 1000 is true' });
    expect(cap.applies).toBe('yes');
    expect(ex.decision).toBe('deny');
    const under = explain(set, { tool: 'dispatch_vendor', args: { unitId: 'u', estimateUsd: 10 } }, support);
    expect(ruleOf(under, 'vendor-hard-cap')).toMatchObject({
      applies: 'no',
      when: { truth: false, why: 'estimateUsd > 1000 is false' },
    });
    const wipe = explain(set, { tool: 'wipe_orders', args: {} }, support);
    expect(ruleOf(wipe, 'no-destructive-in-prod')).toEqual({
      id: 'no-destructive-in-prod',
      effect: 'abort',
      selectors: [
        { selector: 'kinds', matched: true, why: 'kind destructive is in [destructive]' },
        { selector: 'envs', matched: true, why: 'environment prod is in [prod]' },
      ],
      applies: 'yes',
    });
    expect(ruleOf(wipe, 'no-wipe').applies).toBe('yes'); // explain evaluates every rule, even after an abort
    expect(wipe.decision).toBe('abort');
  });

  it('a when on a rule whose selectors fail is still explained (undecidable, naming the path only)', async () => {
    const ex = explain(await load(), { tool: 'refund', args: { order: 'A1', amount: 5 } }, support);
    expect(ruleOf(ex, 'vendor-hard-cap')).toMatchObject({
      applies: 'no',
      when: { truth: 'undecidable', why: 'undecidable: `estimateUsd` is missing' },
    });
  });

  it('guard findings: the path and kind, never the value', async () => {
    const ex = explain(await load(), { tool: 'send_note', args: { text: `mail ${PII}` } }, support);
    const g = ex.trace.files[0]!.guards[0]!;
    expect(g).toMatchObject({ guard: 'pii', action: 'require_approval', finding: { path: '/text', kind: 'email' } });
    expect(g.selectors).toEqual([{ selector: 'tools', matched: true, why: 'tool "send_note" is in [send_note]' }]);
    expect(ex.decision).toBe('require_approval');
    expect(ex.rule).toBe(g.id);
    expect(JSON.stringify(ex.trace)).not.toContain(PII);
    const clean = explain(await load(), { tool: 'send_note', args: { text: 'hello' } }, support);
    expect(clean.trace.files[0]!.guards[0]!.finding).toBeNull();
  });

  it('limits: max_calls and the steps counted from the run view', async () => {
    const steps = Array.from({ length: 200 }, () => ({ tool: 'lookup_order' }));
    const ex = explain(await load(), { tool: 'lookup_order', args: {}, run: { steps } }, support);
    expect(ex.trace.files[0]!.limits).toEqual({ max_calls: 200, steps: 200 });
    expect(ex.decision).toBe('abort');
    expect(ex.rule).toBe('payments#limits.max_calls');
  });
});

describe('restricts_only and undecidable conditions in the trace', () => {
  const set = buildPolicySet(
    [
      {
        path: 'p.yaml',
        bytes: enc(
          [
            'policy: p',
            'default: allow',
            'rules:',
            '  - id: ask-big',
            '    tools: [export]',
            '    when: "size > 10"',
            '    allow: true',
            '    confirm: true',
            '  - id: allow-flagged',
            '    tools: [export]',
            '    when: "enabled"',
            '    allow: true',
            '  - id: deny-odd',
            '    tools: [export]',
            '    when: "kind == \'odd\'"',
            '    allow: false',
            '',
          ].join('\n'),
        ),
      },
    ],
    {},
  );
  const who: Identity = { user: 'u1', team: null, agent: null, roles: [] };

  it('an undecidable when: restricts_only on an allow rule with confirm, yes on a deny rule, no on a plain allow', () => {
    const ex = explain(set, { tool: 'export', args: {} }, who);
    const [ask, flagged, odd] = ex.trace.files[0]!.rules;
    expect(ask).toMatchObject({
      id: 'ask-big',
      applies: 'restricts_only',
      when: { truth: 'undecidable', why: 'undecidable: `size` is missing' },
      confirm: { truth: true, why: 'confirm: true' },
    });
    expect(flagged).toMatchObject({
      id: 'allow-flagged',
      applies: 'no',
      when: { truth: 'undecidable', why: 'undecidable: `enabled` is missing' },
    });
    expect(odd).toMatchObject({
      id: 'deny-odd',
      applies: 'yes',
      when: { truth: 'undecidable', why: 'undecidable: `kind` is missing' },
    });
    expect(ex.decision).toBe('deny');
    expect(ex.rule).toBe('deny-odd');
  });

  it('a type mismatch is undecidable and the why names types, not values', () => {
    const ex = explain(set, { tool: 'export', args: { size: 'VALUE-big', enabled: 'VALUE-yes', kind: 'even' } }, who);
    const [ask, flagged, odd] = ex.trace.files[0]!.rules;
    expect(ask!.when).toEqual({ truth: 'undecidable', why: 'undecidable: `size` is a string, compared with a number' });
    expect(flagged!.when).toEqual({ truth: 'undecidable', why: 'undecidable: `enabled` is a string, not a boolean' });
    expect(odd).toMatchObject({ applies: 'no', when: { truth: false } });
    expect(ex.decision).toBe('require_approval'); // ask-big restricts: its confirm applies to the default allow
    expect(ex.rule).toBe('ask-big');
    expect(JSON.stringify(ex.trace)).not.toContain('VALUE-');
    expect(ex.reason + ex.message).not.toContain('VALUE-');
  });

  it('decided conditions: applies yes with the truth', () => {
    const ex = explain(set, { tool: 'export', args: { size: 20, enabled: true, kind: 'even' } }, who);
    const [ask, flagged] = ex.trace.files[0]!.rules;
    expect(ask).toMatchObject({ applies: 'yes', when: { truth: true, why: 'size > 10 is true' } });
    expect(flagged).toMatchObject({ applies: 'yes', when: { truth: true, why: 'enabled is true' } });
    expect(ex).toMatchObject({ decision: 'require_approval', rule: 'ask-big' });
    expect(decide(set, { tool: 'export', args: { size: 20, enabled: true, kind: 'even' } }, who)).toMatchObject({
      decision: 'require_approval',
      rule: 'ask-big',
    });
  });

  it('with no policy file, the trace shows the built-in default', () => {
    const empty = buildPolicySet([], {});
    const ex = explain(empty, { tool: 'anything', args: {} }, who);
    expect(ex.trace.files).toHaveLength(1);
    expect(ex.trace.files[0]).toMatchObject({
      policy: 'builtin',
      default: 'side_effects',
      rules: [],
      guards: [],
      decision: 'deny',
      rule: 'builtin#default',
    });
    expect(ex.decision).toBe('deny');
  });
});

describe('the trace of users and of scopes', () => {
  const set = buildPolicySet([
    {
      path: 'a.yaml',
      bytes: enc(
        'policy: a\ndefault: allow\nrules:\n  - {id: staff, tools: t, users: [alice@example.com, bob-7, carol], allow: true}\n  - {id: one, tools: t, users: dave, teams: ops, agents: bot, confirm: true}\n',
      ),
    },
    {
      path: 'b.yaml',
      bytes: enc('policy: b\nscope: {tools: "x*", users: [erin, frank], teams: ops}\ndefault: deny\n'),
    },
  ]);
  const alice: Identity = { user: 'alice@example.com', team: 'ops', agent: 'bot', roles: [] };

  it("counts the users a selector lists and never shows an id, the caller's included; teams and agents are named", () => {
    for (const caller of [alice, { ...alice, user: 'zed@example.com' }]) {
      const ex = explain(set, { tool: 't', args: {} }, caller);
      const [staff, one] = ex.trace.files[0]!.rules;
      expect(staff!.selectors[1]).toEqual({
        selector: 'users',
        matched: caller === alice,
        why: `the user is ${caller === alice ? '' : 'not '}among the 3 users listed`,
      });
      expect(one!.selectors.map((s) => s.why)).toEqual([
        'tool "t" is in [t]',
        'team ops is in [ops]',
        'the user is not among the 1 user listed',
        'agent bot is in [bot]',
      ]);
      const text = JSON.stringify(ex.trace);
      for (const id of ['alice', 'bob-7', 'carol', 'dave', 'erin', 'frank', 'zed']) expect(text).not.toContain(id);
    }
  });

  it('a file out of scope: its scope with why, no rules, no decision; a file in scope: its scope, all matched', () => {
    const out = explain(set, { tool: 't', args: {} }, alice);
    expect(out.trace.files[1]).toEqual({
      policy: 'b',
      digest: expect.any(String),
      default: 'deny',
      scope: [
        { selector: 'tools', matched: false, why: 'tool "t" is not in [x*]' },
        { selector: 'teams', matched: true, why: 'team ops is in [ops]' },
        { selector: 'users', matched: false, why: 'the user is not among the 2 users listed' },
      ],
      rules: [],
      guards: [],
    });
    expect(out).toMatchObject({ decision: 'allow', rule: 'staff' });
    const erin: Identity = { ...alice, user: 'erin' };
    const inScope = explain(set, { tool: 'x1', args: {} }, erin);
    expect(inScope.trace.files[1]).toMatchObject({
      decision: 'deny',
      rule: 'b#default',
      scope: [{ matched: true }, { matched: true }, { matched: true }],
    });
    expect(inScope).toMatchObject({ decision: 'deny', rule: 'b#default' });
    expect(decide(set, { tool: 'x1', args: {} }, erin)).toMatchObject({ decision: 'deny', rule: 'b#default' });
    expect(decide(set, { tool: 'x1', args: {} }, alice)).toMatchObject({ decision: 'allow', rule: 'a#default' });
  });

  it('when every file is out of scope, the built-in default is traced after them', () => {
    const only = buildPolicySet([{ path: 'b.yaml', bytes: enc('policy: b\nscope: {tools: "x*"}\ndefault: allow\n') }]);
    const ex = explain(only, { tool: 't', args: {} }, alice);
    expect(ex.trace.files.map((f) => [f.policy, f.decision])).toEqual([
      ['b', undefined],
      ['builtin', 'deny'],
    ]);
    expect(ex).toMatchObject({ decision: 'deny', rule: 'builtin#default' });
  });
});
