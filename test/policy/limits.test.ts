// Budgets and rate limits, the pure part (docs/spec.md section 2.9): every load-time refusal of their
// keys (file, line, column, key; never the value), what decide() reports about a call they select
// (its charges), and how settleCharges() turns the limits a call would cross into the answer. The
// stateful part (counting in PostgreSQL) is tested through HTTP in test/http/budgets.test.ts.
import { describe, expect, it } from 'vitest';
import { amountAt, addAmounts, amountOfText, compareAmounts } from '../../src/policy/amount.js';
import { decide, explain } from '../../src/policy/decide.js';
import { PolicyLoadError, type LoadProblem } from '../../src/policy/errors.js';
import { settleCharges, wouldCross, type Refusal } from '../../src/policy/limits.js';
import { buildPolicySet } from '../../src/policy/load.js';
import type { Identity, PolicySet } from '../../src/policy/model.js';
import { parseJson } from '../../src/json/parse.js';
import type { JsonObject } from '../../src/json/value.js';
import { canonicalize } from '../../src/json/canonical.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const load = (files: Record<string, string>, env: string | null = null): PolicySet =>
  buildPolicySet(
    Object.entries(files).map(([path, text]) => ({ path, bytes: enc(text) })),
    { env },
  );

function problemsOf(files: Record<string, string>, env: string | null = null): LoadProblem[] {
  try {
    load(files, env);
  } catch (err) {
    expect(err).toBeInstanceOf(PolicyLoadError);
    return [...(err as PolicyLoadError).problems];
  }
  throw new Error('expected the load to fail');
}

const who = (over: Partial<Identity> = {}): Identity => ({
  user: 'u1',
  team: 'support',
  agent: 'bot',
  roles: [],
  ...over,
});

describe('load-time refusals of budgets and rate limits', () => {
  const cases: { name: string; text: string; want: Partial<LoadProblem>; match: RegExp }[] = [
    {
      name: 'an unknown key in a budget',
      text: 'policy: p\nbudgets:\n  - max: 1\n    per: day\n    scope: user\n    maximum: 2\n',
      want: { line: 6, column: 5, key: 'budgets.0.maximum' },
      match: /^unknown key$/,
    },
    {
      name: "another runtime's `store`",
      text: 'policy: p\nbudgets:\n  - max_usd: 1\n    per: day\n    scope: user\n    store: memory\n',
      want: { line: 6, column: 5, key: 'budgets.0.store' },
      match: /keeps budget counters in its PostgreSQL/,
    },
    {
      name: 'both max and max_usd',
      text: 'policy: p\nbudgets:\n  - max: 1\n    max_usd: 2\n    per: day\n    scope: user\n',
      want: { line: 4, column: 14, key: 'budgets.0.max_usd' },
      match: /`max` or `max_usd`, not both/,
    },
    {
      name: 'neither max nor max_usd',
      text: 'policy: p\nbudgets:\n  - per: day\n    scope: user\n',
      want: { line: 3, column: 5, key: 'budgets.0' },
      match: /needs `max`/,
    },
    {
      name: 'sum with max_usd',
      text: 'policy: p\nbudgets:\n  - max_usd: 1\n    sum: amount\n    per: day\n    scope: user\n',
      want: { line: 4, column: 10, key: 'budgets.0.sum' },
      match: /`sum` goes with `max`/,
    },
    {
      name: 'a sum that is not a path',
      text: 'policy: p\nbudgets:\n  - max: 1\n    sum: "a..b"\n    per: day\n    scope: user\n',
      want: { line: 4, column: 10, key: 'budgets.0.sum' },
      match: /path segments/,
    },
    {
      name: 'a sum that reads a secret',
      text: 'policy: p\nbudgets:\n  - max: 1\n    sum: api_token\n    per: day\n    scope: user\n',
      want: { key: 'budgets.0.sum' },
      match: /looks like a secret/,
    },
    {
      name: 'a maximum a double cannot hold as written',
      text: 'policy: p\nbudgets:\n  - max: 12345678901234567891\n    per: day\n    scope: user\n',
      want: { line: 3, column: 10, key: 'budgets.0.max' },
      match: /cannot hold exactly/,
    },
    {
      name: 'a negative maximum',
      text: 'policy: p\nbudgets:\n  - max: -1\n    per: day\n    scope: user\n',
      want: { line: 3, column: 10, key: 'budgets.0.max' },
      match: />= 0/,
    },
    {
      name: 'a budget window that is neither a unit nor a duration',
      text: 'policy: p\nbudgets:\n  - max: 1\n    per: fortnight\n    scope: user\n',
      want: { line: 4, column: 10, key: 'budgets.0.per' },
      match: /minute, hour, day, week, month, or a duration/,
    },
    {
      name: 'a budget window longer than a year',
      text: 'policy: p\nbudgets:\n  - max: 1\n    per: 400d\n    scope: user\n',
      want: { line: 4, column: 10, key: 'budgets.0.per' },
      match: /at most a year/,
    },
    {
      name: 'a window in milliseconds that is not whole seconds (counters count seconds)',
      text: 'policy: p\nrate_limits:\n  - calls: 3\n    per: 1500ms\n    scope: user\n',
      want: { line: 4, column: 10, key: 'rate_limits.0.per' },
      match: /a rate limit window is a whole number of seconds/,
    },
    {
      name: 'a window with a unit the grammar does not know',
      text: 'policy: p\nrate_limits:\n  - calls: 3\n    per: 2w\n    scope: user\n',
      want: { line: 4, column: 10, key: 'rate_limits.0.per' },
      match: /must be a duration: .*a bare number is seconds/,
    },
    {
      name: 'a rate limit over a calendar unit (its window slides)',
      text: 'policy: p\nrate_limits:\n  - calls: 3\n    per: day\n    scope: user\n',
      want: { line: 4, column: 10, key: 'rate_limits.0.per' },
      match: /must be a duration/,
    },
    {
      name: 'a rate limit of zero calls',
      text: 'policy: p\nrate_limits:\n  - calls: 0\n    per: 60\n    scope: user\n',
      want: { line: 3, column: 12, key: 'rate_limits.0.calls' },
      match: />= 1/,
    },
    {
      name: 'a rate limit of more calls than its counter keeps',
      text: 'policy: p\nrate_limits:\n  - calls: 1001\n    per: 60\n    scope: user\n',
      want: { key: 'rate_limits.0.calls' },
      match: /<= 1000/,
    },
    {
      name: 'a budget without a scope',
      text: 'policy: p\nbudgets:\n  - max: 1\n    per: day\n',
      want: { line: 3, column: 5, key: 'budgets.0' },
      match: /missing required key "scope"/,
    },
    {
      name: 'an unknown scope',
      text: 'policy: p\nrate_limits:\n  - calls: 1\n    per: 60\n    scope: tenant\n',
      want: { line: 5, column: 12, key: 'rate_limits.0.scope' },
      match: /must be one of: user, team, agent, run, global/,
    },
    {
      name: 'an unknown on_exceed',
      text: 'policy: p\nbudgets:\n  - max: 1\n    per: day\n    scope: user\n    on_exceed: warn\n',
      want: { line: 6, column: 16, key: 'budgets.0.on_exceed' },
      match: /deny, require_approval, abort/,
    },
    {
      name: 'an empty selector',
      text: 'policy: p\nbudgets:\n  - tools: []\n    max: 1\n    per: day\n    scope: user\n',
      want: { line: 3, column: 12, key: 'budgets.0.tools' },
      match: /must not be empty/,
    },
    {
      name: 'an environment the file does not declare',
      text: 'policy: p\nenvironments: [prod]\nrate_limits:\n  - envs: dev\n    calls: 1\n    per: 60\n    scope: user\n',
      want: { line: 4, column: 11, key: 'rate_limits.0.envs' },
      match: /not declared/,
    },
    {
      name: 'an id Gatehouse writes itself',
      text: 'policy: p\nbudgets:\n  - id: "p#1"\n    max: 1\n    per: day\n    scope: user\n',
      want: { line: 3, column: 9, key: 'budgets.0.id' },
      match: /cannot contain "#"/,
    },
    {
      name: 'a budget id that is also a rule id',
      text: 'policy: p\nrules:\n  - {id: refunds, tools: refund, allow: true}\nbudgets:\n  - id: refunds\n    max: 1\n    per: day\n    scope: user\n',
      want: { line: 5, column: 9, key: 'budgets.0.id' },
      match: /used twice in this file/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const problems = problemsOf({ 'p.yaml': c.text }, c.text.includes('environments') ? 'prod' : null);
      expect(problems, JSON.stringify(problems)).toHaveLength(1);
      expect(problems[0]).toMatchObject({ file: 'p.yaml', ...c.want });
      expect(problems[0]!.message).toMatch(c.match);
    });
  }

  it('a rate limit id used by a budget of another file', () => {
    const problems = problemsOf({
      'a.yaml': 'policy: a\nbudgets:\n  - {id: shared, max: 1, per: day, scope: user}\n',
      'b.yaml': 'policy: b\nrate_limits:\n  - {id: shared, calls: 1, per: 60, scope: user}\n',
    });
    expect(problems).toMatchObject([{ file: 'b.yaml', line: 3, column: 10, key: 'rate_limits.0.id' }]);
    expect(problems[0]!.message).toMatch(/also used in a\.yaml/);
  });

  it('lists written as one string, windows and defaults', () => {
    const set = load({
      'p.yaml': `policy: p
budgets:
  - {tools: refund, teams: support, sum: order.amount, max: 1000.50, per: "6h", scope: team}
  - {max: 3, per: 90, scope: global, on_exceed: abort}
  - {max: 3, per: "90", scope: global}
rate_limits:
  - {id: mail, kinds: remote_mutation, calls: 10, per: "2m", scope: agent, on_exceed: require_approval}
  - {calls: 10, per: 2000ms, scope: agent}
`,
    });
    // A bare number is seconds, written as a number or as a string, as in every duration (docs/configuration.md).
    expect(set.files[0]!.budgets[2]).toMatchObject({ per: { seconds: 90, text: '90' } });
    expect(set.files[0]!.rateLimits[1]).toMatchObject({ perSeconds: 2, perText: '2000ms' });
    const [a, b] = set.files[0]!.budgets;
    expect(a).toMatchObject({
      id: 'p#budgets.0',
      measure: { sum: { text: 'order.amount' } },
      per: { seconds: 21_600, text: '6h' },
      onExceed: 'deny',
    });
    expect(a!.max).toEqual({ text: '1000.5', value: 1000.5, written: '1000.50' });
    expect(a!.selectors.tools?.map((g) => g.source)).toEqual(['refund']);
    expect(a!.selectors.teams).toEqual(new Set(['support']));
    expect(b).toMatchObject({
      id: 'p#budgets.1',
      measure: { calls: true },
      per: { seconds: 90 },
      scope: 'global',
      onExceed: 'abort',
    });
    expect(set.files[0]!.rateLimits[0]).toMatchObject({
      id: 'mail',
      calls: 10,
      perSeconds: 120,
      perText: '2m',
      scope: 'agent',
      onExceed: 'require_approval',
    });
    expect(set.limits.map((l) => l.id)).toEqual([
      'p#budgets.0',
      'p#budgets.1',
      'p#budgets.2',
      'mail',
      'p#rate_limits.1',
    ]);
  });
});

describe('exact amounts', () => {
  it('reads numbers as written, refuses negatives and numbers a tool would read otherwise', () => {
    const doc = parseJson(
      '{"a": 100.50, "b": 1e2, "c": -1, "d": 1234567890123456789, "e": 0.1, "f": 5e-324}',
    ) as JsonObject;
    expect(amountAt(doc, 'a', doc.a as number)).toEqual({ text: '100.5', value: 100.5, written: '100.50' });
    expect(amountAt(doc, 'b', doc.b as number)).toEqual({ text: '100', value: 100, written: '1e2' });
    expect(amountAt(doc, 'c', doc.c as number)).toBeNull();
    expect(amountAt(doc, 'd', doc.d as number)).toBeNull();
    expect(amountAt(doc, 'f', doc.f as number)?.text).toBe(`0.${'0'.repeat(323)}5`);
    const tenth = amountAt(doc, 'e', doc.e as number)!;
    let sum = amountOfText('0')!;
    for (let i = 0; i < 10; i++) sum = addAmounts(sum, tenth);
    expect(sum.text).toBe('1'); // and not 0.9999999999999999
    expect(compareAmounts(sum, amountOfText('1.000')!)).toBe(0);
    expect(amountOfText('-3')).toBeNull();
  });
});

const REFUNDS = `policy: refunds
tools:
  refund: {kind: remote_mutation, tags: [money]}
  "lookup_*": {kind: read_only}
rules:
  - {id: refunds, tools: refund, allow: true, confirm: "amount > 1000", reason: big refund}
  - {id: lookups, tools: "lookup_*", allow: true}
  - {id: no-vip, tools: refund, teams: vip, allow: false}
budgets:
  - {id: per-user, tools: refund, sum: amount, max: 1000, per: day, scope: user, on_exceed: require_approval}
  - {id: per-team, tags: money, teams: support, sum: amount, max: 5000, per: month, scope: team}
  - {id: per-run, tools: refund, sum: amount, max: 300, per: 1h, scope: run, on_exceed: abort}
rate_limits:
  - {id: lookups, tools: "lookup_*", calls: 5, per: 60, scope: agent}
`;

describe('decide() reports the budgets and rate limits that select a call (its charges), and touches nothing', () => {
  const set = load({
    'refunds.yaml': REFUNDS.replace(
      '  - {id: lookups, tools: "lookup_*", calls',
      '  - {id: lookup-rate, tools: "lookup_*", calls',
    ),
  });

  it('each selecting limit, in load order, with its counter key and the amount as written', () => {
    const args = parseJson('{"order": "A1", "amount": 500.00}') as JsonObject;
    const d = decide(set, { tool: 'refund', args, run: { id: 'run-7' } }, who());
    expect(d.decision).toBe('allow');
    expect(d.charges?.map((c) => [c.limit.id, c.key, c.amount?.text, c.amount?.written])).toEqual([
      ['per-user', 'user:u1', '500', '500.00'],
      ['per-team', 'team:support', '500', '500.00'],
      ['per-run', 'run:u1\nrun-7', '500', '500.00'],
    ]);
  });

  it('caller selectors and undecidable keys and amounts', () => {
    const d = decide(set, { tool: 'refund', args: { amount: '500' } }, who({ team: 'sales' }));
    // per-team selects team support only; no run id; a string amount
    expect(d.charges?.map((c) => [c.limit.id, c.key, c.amount])).toEqual([
      ['per-user', 'user:u1', null],
      ['per-run', null, null],
    ]);
    const noTeam = decide(set, { tool: 'lookup_x', args: {} }, who({ agent: null }));
    expect(noTeam.charges?.map((c) => [c.limit.id, c.key, c.amount?.text])).toEqual([['lookup-rate', null, '1']]);
  });

  it('a call the policy denies or aborts counts in none: no charges', () => {
    const d = decide(set, { tool: 'refund', args: { amount: 5 } }, who({ team: 'vip' }));
    expect(d.decision).toBe('deny');
    expect(d.charges).toBeUndefined();
  });

  it('a call that asks for approval carries its charges (a redeemed grant counts it)', () => {
    const d = decide(set, { tool: 'refund', args: { amount: 1500 } }, who());
    expect(d.decision).toBe('require_approval');
    expect(d.charges?.map((c) => c.limit.id)).toEqual(['per-user', 'per-team', 'per-run']);
  });

  it('a policy set without limits plans none, and its decisions carry no charges field at all', () => {
    const plain = load({ 'p.yaml': 'policy: p\ntools: {a: {kind: read_only}}\nrules: [{tools: a, allow: true}]\n' });
    expect(plain.limits).toEqual([]);
    expect(plain.plan('a').limits).toHaveLength(0);
    expect(Object.isFrozen(plain.plan('a').limits)).toBe(true); // the one shared empty list: nothing allocated per tool
    const d = decide(plain, { tool: 'a', args: {} }, who());
    expect(Object.keys(d)).not.toContain('charges');
  });

  it("a budget in a scoped file applies only to the calls the file's scope selects", () => {
    const scoped = load({
      'base.yaml': 'policy: base\ndefault: allow\n',
      'ops.yaml':
        'policy: ops\nscope: {teams: ops}\ndefault: allow\nbudgets:\n  - {id: ops-calls, max: 2, per: day, scope: team}\n',
    });
    expect(decide(scoped, { tool: 't', args: {} }, who({ team: 'ops' })).charges?.map((c) => c.limit.id)).toEqual([
      'ops-calls',
    ]);
    expect(decide(scoped, { tool: 't', args: {} }, who({ team: 'support' })).charges).toBeUndefined();
  });

  it('under several descriptions of a tool, a limit that matches any of them applies', () => {
    const two = load({
      'a.yaml': 'policy: a\ndefault: allow\ntools: {"x_*": {kind: read_only}}\n',
      'b.yaml':
        'policy: b\ndefault: allow\ntools: {x_pay: {kind: remote_mutation, tags: [money]}}\nbudgets:\n  - {id: money, tags: money, max: 1, per: day, scope: user}\n',
    });
    expect(decide(two, { tool: 'x_pay', args: {} }, who()).charges?.map((c) => c.limit.id)).toEqual(['money']);
  });

  it('explain traces each limit that reaches the tool: selected or not, and what is undecidable (users counted, never named)', () => {
    const e = explain(set, { tool: 'refund', args: {} }, who({ team: 'sales' }));
    expect(e.trace.limits).toEqual([
      {
        id: 'per-user',
        type: 'budget',
        policy: 'refunds',
        selectors: [],
        selected: true,
        scope: 'user',
        undecidable: 'amount',
      },
      {
        id: 'per-team',
        type: 'budget',
        policy: 'refunds',
        selectors: [{ selector: 'teams', matched: false, why: 'team sales is not in [support]' }],
        selected: false,
        scope: 'team',
      },
      {
        id: 'per-run',
        type: 'budget',
        policy: 'refunds',
        selectors: [],
        selected: true,
        scope: 'run',
        undecidable: 'scope',
      },
    ]);
    expect(JSON.stringify(e.trace.limits)).not.toContain('u1');
  });
});

describe('settleCharges: the answer of a call over the limits it would cross', () => {
  const set = load({
    'refunds.yaml': REFUNDS.replace(
      'id: lookups, tools: "lookup_*", calls',
      'id: lookup-rate, tools: "lookup_*", calls',
    ),
  });
  const request = {
    tool: 'refund',
    args: parseJson('{"order": "A1", "amount": 500.0}') as JsonObject,
    run: { id: 'r1' },
  };
  const fresh = decide(set, request, who());
  const charge = (id: string) => fresh.charges!.find((c) => c.limit.id === id)!;
  const standing = (counted: string) => ({
    counted: amountOfText(counted)!,
    windowStart: '2026-12-02T00:00:00.000Z',
    windowEnd: '2026-12-03T00:00:00.000Z',
  });

  it('none crossed: the answer stands', () => {
    expect(settleCharges(fresh, request, [])).toBe(fresh);
  });

  it('wouldCross: a sum may reach the maximum, not pass it; reported spend is refused once reached; rate limits by calls', () => {
    expect(wouldCross(charge('per-user'), amountOfText('500')!)).toBe(false);
    expect(wouldCross(charge('per-user'), amountOfText('500.01')!)).toBe(true);
    expect(wouldCross({ ...charge('per-user'), key: null }, amountOfText('0')!)).toBe(true);
    expect(wouldCross({ ...charge('per-user'), amount: null }, amountOfText('0')!)).toBe(true);
  });

  it('require_approval: one requirement per budget, showing the limit, the amount and the standing, which the hash does not cover', () => {
    const refusal = (counted: string): Refusal => ({ charge: charge('per-user'), standing: standing(counted) });
    const a = settleCharges(fresh, request, [refusal('900')]);
    expect(a).toMatchObject({ decision: 'require_approval', rule: 'per-user' });
    expect(a.approval?.requirements).toHaveLength(1);
    const req = a.approval!.requirements[0]!;
    expect(req).toMatchObject({
      policy: 'refunds',
      rule: 'per-user',
      kind: 'budget',
      capability: { tool: 'refund', args: request.args },
    });
    expect(canonicalize(req.presentation)).toBe(
      '{"amount":500.0,"budget":"per-user","max":1000,"per":"day","scope":"user","sum":"amount"}',
    );
    expect(canonicalize(req.standing!)).toBe(
      '{"counted":900,"window_end":"2026-12-03T00:00:00.000Z","window_start":"2026-12-02T00:00:00.000Z"}',
    );
    expect(req.reason).toBe(
      'budget "per-user" allows 1000 of `amount` per day (UTC) per user, 900 counted in this window: this call would cross it',
    );
    expect(a.reason).not.toContain('500');
    // Another standing, the same approval: a retry after other calls counted is not a new one.
    const b = settleCharges(fresh, request, [refusal('990')]);
    expect(b.approval!.hash).toBe(a.approval!.hash);
    expect(b.approval!.requirements[0]!.reason).toContain('990 counted');
    // Another amount is another approval.
    const other = { ...request, args: { order: 'A1', amount: 501 } };
    const c = settleCharges(decide(set, other, who()), other, [
      { charge: decide(set, other, who()).charges![0]!, standing: standing('900') },
    ]);
    expect(c.approval!.hash).not.toBe(a.approval!.hash);
  });

  it("after the policy's own requirement when it already asked; the most severe on_exceed wins", () => {
    const big = { tool: 'refund', args: { amount: 1500 }, run: { id: 'r1' } };
    const asked = decide(set, big, who());
    const c = (id: string) => asked.charges!.find((x) => x.limit.id === id)!;
    const both = settleCharges(asked, big, [{ charge: c('per-user'), standing: standing('0') }]);
    expect(both).toMatchObject({ decision: 'require_approval', rule: 'refunds', reason: 'big refund' });
    expect(both.approval!.requirements.map((r) => [r.rule, r.kind])).toEqual([
      ['refunds', 'confirm'],
      ['per-user', 'budget'],
    ]);
    expect(both.approval!.hash).not.toBe(asked.approval!.hash);
    const denied = settleCharges(asked, big, [
      { charge: c('per-user'), standing: standing('0') },
      { charge: c('per-team'), standing: standing('4000') },
    ]);
    expect(denied).toMatchObject({ decision: 'deny', rule: 'per-team' });
    expect(denied.approval).toBeUndefined();
    const aborted = settleCharges(asked, big, [
      { charge: c('per-team'), standing: standing('4000') },
      { charge: c('per-run'), standing: standing('0') },
    ]);
    expect(aborted).toMatchObject({ decision: 'abort', rule: 'per-run' });
    expect(aborted.message).toMatch(/crossed a hard limit of this run/);
  });
});
