// decide() and explain(): the reason texts, the trace's optional members and the argument paths in
// reasons, each pinned by a row that fails when the check behind it is changed (mutation testing,
// docs/operations.md). The broader behaviour is in decide.test.ts, explain.test.ts and test/cases/.
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/json/value.js';
import { decide, explain } from '../../src/policy/decide.js';
import { buildPolicySet } from '../../src/policy/load.js';
import type { DecideRequest, Identity, PolicySet } from '../../src/policy/model.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const who: Identity = { user: 'u1', team: 'support', agent: null, roles: [] };

function setOf(files: Record<string, unknown>, env: string | null = null): PolicySet {
  return buildPolicySet(
    Object.entries(files).map(([path, doc]) => ({ path, bytes: enc(JSON.stringify(doc)) })),
    { env },
  );
}

function answer(set: PolicySet, request: DecideRequest): { decision: string; reason: string; rule: string } {
  const d = decide(set, request, who);
  const { trace: _trace, ...ex } = explain(set, request, who);
  expect(ex).toEqual(d); // the two never disagree
  return { decision: d.decision, reason: d.reason, rule: d.rule };
}

describe('reasons', () => {
  const set = setOf({
    'p.json': {
      policy: 'p',
      tools: {
        stop: { kind: 'read_only' },
        no: { kind: 'read_only' },
        ask: { kind: 'read_only', confirm: true },
        look: { kind: 'read_only' },
      },
      rules: [
        { id: 'stop-it', tools: ['stop'], abort: true },
        { id: 'no-it', tools: ['no'], allow: false },
        { id: 'ask-it', tools: ['ask'], allow: true },
      ],
    },
  });

  it.each([
    ['stop', 'abort', 'rule "stop-it" ends the run', 'stop-it'],
    ['no', 'deny', 'rule "no-it" denies it', 'no-it'],
    ['ask', 'require_approval', '"ask" always needs confirmation', 'p#tools.ask'],
    ['look', 'allow', 'no rule matched; read_only tools are allowed by default', 'p#default'],
  ])('%s: %s, %j', (tool, decision, reason, rule) => {
    expect(answer(set, { tool, args: {} })).toEqual({ decision, reason, rule });
  });

  it('the run limit names itself, and never replaces an abort that a rule gave', () => {
    const limited = setOf({
      'p.json': {
        policy: 'p',
        tools: { look: { kind: 'read_only' }, stop: { kind: 'read_only' } },
        limits: { max_calls: 2 },
        rules: [{ id: 'stop-it', tools: ['stop'], abort: true, reason: 'stop means stop' }],
      },
    });
    const run = {
      steps: [
        { tool: 'look', decision: 'allow' as const },
        { tool: 'look', decision: 'allow' as const },
      ],
    };
    expect(answer(limited, { tool: 'look', args: {}, run })).toEqual({
      decision: 'abort',
      reason: 'the run reached its limit of 2 calls',
      rule: 'p#limits.max_calls',
    });
    expect(answer(limited, { tool: 'stop', args: {}, run })).toEqual({
      decision: 'abort',
      reason: 'stop means stop',
      rule: 'stop-it',
    });
  });

  it('a default names the environment only where the file declares environments and one is set', () => {
    const doc = { policy: 'p', default: 'deny', tools: { look: { kind: 'read_only' } } };
    const look = { tool: 'look', args: {} };
    expect(answer(setOf({ 'p.json': { ...doc, environments: ['prod'] } }, 'prod'), look).reason).toBe(
      'no rule matched; the default in prod is deny',
    );
    expect(answer(setOf({ 'p.json': doc }, 'prod'), look).reason).toBe('no rule matched; the default is deny');
    expect(answer(setOf({ 'p.json': doc }), look).reason).toBe('no rule matched; the default is deny');
  });

  it('a guard says what it found and whether in a key, for each kind', () => {
    const guarded = setOf({
      'p.json': {
        policy: 'p',
        tools: { note: { kind: 'read_only' } },
        guards: [{ id: 'pii', guard: 'pii', tools: ['note'], action: 'deny' }],
      },
    });
    const inputs: JsonObject[] = [
      { text: 'mail bob@example.com' },
      { text: 'call +1 415 555 0100 now' },
      { text: '4111 1111 1111 1111' },
      { text: 'GB82 WEST 1234 5698 7654 32' },
      { 'bob@example.com': 'x' },
    ];
    const reasons = inputs.map((args) => answer(guarded, { tool: 'note', args }).reason);
    expect(reasons).toEqual([
      'guard "pii" found an email address at /*',
      'guard "pii" found a phone number at /*',
      'guard "pii" found a card number at /*',
      'guard "pii" found an IBAN at /*',
      'guard "pii" found an email address in a key of /',
    ]);
  });

  it('an internal error is a deny whose message does not ask to correct the arguments', () => {
    const broken: PolicySet = {
      ...setOf({}),
      plan: () =>
        ((): never => {
          throw new Error('boom');
        })(),
    };
    const d = decide(broken, { tool: 't', args: {} }, who);
    expect(d.message).toBe(
      'The "t" action was not approved by policy. Reason: an internal error stopped the policy evaluation. Tell the user it was declined; do not retry it unchanged.',
    );
  });
});

describe('argument paths in a schema refusal', () => {
  const set = setOf({
    'p.json': {
      policy: 'p',
      tools: {
        t: {
          kind: 'read_only',
          schema: {
            type: 'object',
            properties: {
              items: { type: 'array', items: { type: 'string' } },
              'a/b': { type: 'string' },
              'a~b': { type: 'string' },
            },
          },
        },
      },
    },
  });
  const where = (args: Record<string, unknown>): string =>
    answer(set, { tool: 't', args: args as DecideRequest['args'] }).reason.split(': ')[1] ?? '';

  it('keeps an array index of several digits', () => {
    expect(where({ items: [...Array.from({ length: 12 }, () => 'x'), 1] })).toBe(
      '/items/12 must be string (keyword type)',
    );
  });

  it('keeps a declared key holding / or ~, escaped as in a JSON pointer', () => {
    expect(where({ 'a/b': 1 })).toBe('/a~1b must be string (keyword type)');
    expect(where({ 'a~b': 1 })).toBe('/a~0b must be string (keyword type)');
  });
});

describe("the trace's optional members", () => {
  it('the built-in default, with no file, has an empty digest and no version, view or limits', () => {
    const ex = explain(setOf({}), { tool: 't', args: {} }, who);
    expect(ex.trace.files).toHaveLength(1);
    const file = ex.trace.files[0]!;
    expect(file.digest).toBe('');
    expect(Object.keys(file)).not.toContain('version');
    expect(Object.keys(file)).not.toContain('view');
    expect(Object.keys(ex.trace)).not.toContain('limits');
    expect(Object.keys(file)).not.toContain('limits');
  });

  it('a guard that could not make the answer more severe still shows its finding', () => {
    const set = setOf({
      'p.json': {
        policy: 'p',
        tools: { note: { kind: 'read_only' } },
        rules: [{ id: 'no', tools: ['note'], allow: false }],
        guards: [{ id: 'pii', guard: 'pii', tools: ['note'], action: 'require_approval' }],
      },
    });
    const ex = explain(set, { tool: 'note', args: { text: 'bob@example.com' } }, who);
    expect(ex.decision).toBe('deny');
    expect(ex.trace.files[0]!.guards[0]!.finding).toEqual({ path: '/text', kind: 'email' });
  });
});

describe('a tool described by several catalogues (docs/design.md)', () => {
  const set = setOf({
    'a.json': {
      policy: 'a',
      tools: { 't*': { kind: 'read_only', schema: { type: 'object', properties: { text: { type: 'string' } } } } },
      guards: [{ id: 'pii', guard: 'pii', tools: ['t'], action: 'deny' }],
    },
    'b.json': { policy: 'b', tools: { '*t': { kind: 'destructive' } } },
    'c.json': { policy: 'c', scope: { kinds: ['read_only'] }, rules: [{ id: 'r', tools: ['t'], allow: true }] },
    'd.json': { policy: 'd', default: 'deny' },
    'e.json': { policy: 'e', scope: { kinds: ['remote_mutation'] }, default: 'allow' },
  });

  it("each file's most severe answer over the descriptions counts, the first description among equals", () => {
    const ex = explain(set, { tool: 't', args: {} }, who);
    expect(answer(set, { tool: 't', args: {} })).toEqual({
      decision: 'deny',
      reason: 'no rule matched; destructive tools are denied by default',
      rule: 'a#default',
    });
    expect(ex.trace.catalogue.views?.map((v) => [v.policy, v.kind])).toEqual([
      ['a', 'read_only'],
      ['b', 'destructive'],
    ]);
    const files = ex.trace.files.map((f) => [f.policy, f.view, f.decision, f.rule]);
    expect(files).toEqual([
      ['a', 1, 'deny', 'a#default'], // allowed as read_only, denied as destructive
      ['b', 1, 'deny', 'b#default'],
      ['c', 0, 'allow', 'r'], // in scope only as read_only
      ['d', 0, 'deny', 'd#default'], // deny under both: the first
      ['e', undefined, undefined, undefined], // in scope under neither: no answer
    ]);
    expect(ex.trace.files[4]!.scope?.[0]?.why).toContain('read_only'); // the first description's scope check
  });

  it("a reason names an argument that any description's schema declares", () => {
    // File a denies under both descriptions, by its guard under the first: that answer counts.
    expect(answer(set, { tool: 't', args: { text: 'bob@example.com' } })).toEqual({
      decision: 'deny',
      reason: 'guard "pii" found an email address at /text',
      rule: 'pii',
    });
  });
});

describe('the trace of budgets and rate limits', () => {
  const set = setOf({
    'p.json': {
      policy: 'p',
      scope: { teams: ['support'], kinds: ['remote_mutation'] },
      tools: { refund: { kind: 'remote_mutation' } },
      rules: [{ id: 'r', tools: ['refund'], allow: true }],
      budgets: [
        { id: 'mine', tools: 'refund', sum: 'amount', max: 1000, per: 'day', scope: 'user', on_exceed: 'deny' },
        {
          id: 'sales',
          tools: 'refund',
          teams: ['sales'],
          sum: 'amount',
          max: 1000,
          per: 'day',
          scope: 'user',
          on_exceed: 'deny',
        },
        { id: 'agents', tools: 'refund', sum: 'amount', max: 1000, per: 'day', scope: 'agent', on_exceed: 'deny' },
      ],
    },
  });
  const limits = (args: JsonObject) =>
    explain(set, { tool: 'refund', args }, who).trace.limits?.map((l) => ({
      id: l.id,
      selectors: l.selectors.map((s) => [s.selector, s.matched]),
      selected: l.selected,
      undecidable: l.undecidable,
    }));

  it("shows the caller selectors of the file's scope and of the limit, whether selected, and what a selected one lacks", () => {
    const scope = ['teams', true];
    expect(limits({ amount: 5 })).toEqual([
      { id: 'mine', selectors: [scope], selected: true, undecidable: undefined },
      { id: 'sales', selectors: [scope, ['teams', false]], selected: false, undecidable: undefined },
      { id: 'agents', selectors: [scope], selected: true, undecidable: 'scope' }, // the caller has no agent
    ]);
    expect(limits({})).toEqual([
      { id: 'mine', selectors: [scope], selected: true, undecidable: 'amount' },
      { id: 'sales', selectors: [scope, ['teams', false]], selected: false, undecidable: undefined }, // not selected: nothing lacking
      { id: 'agents', selectors: [scope], selected: true, undecidable: 'scope' },
    ]);
  });
});
