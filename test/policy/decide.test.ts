// Example-based tests of decide() for what the YAML cases cannot express: the approval descriptor and
// its hash (docs/spec.md sections 2 and 4), the message texts (section 5), the `policies` list, internal
// errors (fail closed), the bounded plan cache and a 10,000-rule set.
import { describe, expect, it } from 'vitest';
import { approvalHash, canonicalize, sha256 } from '../../src/json/canonical.js';
import { parseJson } from '../../src/json/parse.js';
import type { JsonObject, JsonValue } from '../../src/json/value.js';
import { decide, explain } from '../../src/policy/decide.js';
import { buildPolicySet } from '../../src/policy/load.js';
import type { DecideRequest, Identity, PolicySet } from '../../src/policy/model.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const who: Identity = { user: 'u1', team: 'support', agent: null, roles: [] };

function setOf(files: Record<string, unknown>, env: string | null = null): PolicySet {
  return buildPolicySet(
    Object.entries(files).map(([path, doc]) => ({
      path,
      bytes: enc(typeof doc === 'string' ? doc : JSON.stringify(doc)),
    })),
    { env },
  );
}

const refunds = setOf({
  'p.json': {
    policy: 'payments',
    version: '3',
    tools: {
      refund: {
        kind: 'remote_mutation',
        schema: {
          type: 'object',
          required: ['order'],
          properties: { order: { type: 'string' }, amount: { type: 'number' } },
        },
      },
      send: { kind: 'remote_mutation' },
      ship: { kind: 'local_mutation' },
      cart: { kind: 'local_mutation' },
      plain: { kind: 'local_mutation' },
      wipe: { kind: 'destructive' },
      purge: { kind: 'destructive' },
      read: { kind: 'read_only' },
    },
    rules: [
      {
        id: 'refund-cap',
        tools: ['refund'],
        allow: true,
        confirm: 'amount > 100',
        reason: 'refund over 100 needs an operator',
        approval: {
          kind: 'refund_over_cap',
          capability: ['order', 'amount'],
          presentation: ['order', 'amount', 'note'],
        },
      },
      { id: 'ship-ask', tools: ['ship'], allow: true, confirm: true, approval: { kind: 'shipping' } },
      {
        id: 'cart-ask',
        tools: ['cart'],
        allow: true,
        confirm: true,
        approval: { capability: ['items.0.sku', 'items.5.sku', 'items.sku'], presentation: ['items'] },
      },
      { id: 'plain-ask', tools: ['plain'], allow: true, confirm: true },
      { id: 'no-wipe', tools: ['wipe'], allow: false, reason: 'never from an agent.' },
      { id: 'no-purge', tools: ['purge'], abort: true, reason: 'purging ends the run' },
    ],
  },
});

describe('the approval descriptor', () => {
  it('without an approval shape: capability and presentation are {tool, args}; the side_effects kind is remote_mutation', () => {
    const args = { to: 'x', n: 2 };
    const d = decide(refunds, { tool: 'send', args }, who);
    expect(d.decision).toBe('require_approval');
    const shape = { kind: 'remote_mutation', capability: { tool: 'send', args }, presentation: { tool: 'send', args } };
    expect(d.approval).toEqual({
      ...shape,
      requirements: [
        {
          policy: 'payments',
          rule: 'payments#default',
          reason: 'no rule matched; remote_mutation tools need approval by default',
          ...shape,
        },
      ],
      hash: approvalHash({ tool: 'send', args, ...shape }),
    });
  });

  it('a rule with confirm and no approval shape: kind confirm, {tool, args}', () => {
    const d = decide(refunds, { tool: 'plain', args: { a: 1 } }, who);
    expect(d.approval).toMatchObject({
      kind: 'confirm',
      capability: { tool: 'plain', args: { a: 1 } },
      presentation: { tool: 'plain', args: { a: 1 } },
    });
  });

  it('an approval shape copies the named paths, keyed by path; a missing path is absent', () => {
    const args = { order: 'A1', amount: 150, extra: true };
    const d = decide(refunds, { tool: 'refund', args }, who);
    expect(d.decision).toBe('require_approval');
    expect(d.rule).toBe('refund-cap');
    expect(d.approval?.kind).toBe('refund_over_cap');
    expect(d.approval?.capability).toEqual({ order: 'A1', amount: 150 });
    expect(d.approval?.presentation).toEqual({ order: 'A1', amount: 150 }); // no `note` in the arguments
    expect(Object.hasOwn(d.approval!.presentation, 'note')).toBe(false);
    expect(d.approval?.hash).toBe(
      approvalHash({
        tool: 'refund',
        args,
        kind: 'refund_over_cap',
        capability: { order: 'A1', amount: 150 },
        presentation: { order: 'A1', amount: 150 },
      }),
    );
  });

  it('a shape that omits capability and presentation gives {} for both', () => {
    const args = { to: 'x' };
    const d = decide(refunds, { tool: 'ship', args }, who);
    expect(d.approval).toEqual({
      kind: 'shipping',
      capability: {},
      presentation: {},
      requirements: [
        {
          policy: 'payments',
          rule: 'ship-ask',
          reason: 'rule "ship-ask" asks for confirmation',
          kind: 'shipping',
          capability: {},
          presentation: {},
        },
      ],
      hash: approvalHash({ tool: 'ship', args, kind: 'shipping', capability: {}, presentation: {} }),
    });
  });

  it('nested paths (items.0.sku) copy the nested value; out-of-range and non-index paths are absent', () => {
    const args: JsonObject = { items: [{ sku: 'S-1', qty: 2 }, { sku: 'S-2' }] };
    const d = decide(refunds, { tool: 'cart', args }, who);
    expect(d.approval?.kind).toBe('confirm');
    expect(d.approval?.capability).toEqual({ 'items.0.sku': 'S-1' });
    expect(d.approval?.presentation).toEqual({ items: [{ sku: 'S-1', qty: 2 }, { sku: 'S-2' }] });
  });

  it('the hash is approvalHash over {tool, args, kind, capability, presentation}: sha256 of the canonical form', () => {
    const args = { order: 'A1', amount: 150, note: 'please' };
    const d = decide(refunds, { tool: 'refund', args }, who);
    const a = d.approval!;
    expect(a.hash).toBe(
      approvalHash({ tool: 'refund', args, kind: a.kind, capability: a.capability, presentation: a.presentation }),
    );
    expect(a.hash).toBe(
      sha256(
        canonicalize({ args, capability: a.capability, kind: a.kind, presentation: a.presentation, tool: 'refund' }),
      ),
    );
    expect(a.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('a different note changes the presentation and the hash, not the capability', () => {
    const one = decide(refunds, { tool: 'refund', args: { order: 'A1', amount: 150, note: 'first' } }, who).approval!;
    const two = decide(refunds, { tool: 'refund', args: { order: 'A1', amount: 150, note: 'second' } }, who).approval!;
    expect(two.capability).toEqual(one.capability);
    expect(two.presentation).not.toEqual(one.presentation);
    expect(two.hash).not.toBe(one.hash);
  });

  it('the same request gives the same hash (deterministic, key order does not matter)', () => {
    const one = decide(refunds, { tool: 'refund', args: { order: 'A1', amount: 150, note: 'n' } }, who).approval!;
    const two = decide(refunds, { tool: 'refund', args: { note: 'n', amount: 150, order: 'A1' } }, who).approval!;
    expect(two.hash).toBe(one.hash);
  });

  it('numbers hash as written: 150.0 and 150 give different hashes (default shape and a copied path)', () => {
    const parsed = (text: string): JsonObject => parseJson(text) as JsonObject;
    const a = decide(refunds, { tool: 'refund', args: parsed('{"order":"A1","amount":150.0}') }, who);
    const b = decide(refunds, { tool: 'refund', args: parsed('{"order":"A1","amount":150}') }, who);
    expect(a.decision).toBe('require_approval');
    expect(b.decision).toBe('require_approval');
    expect(a.approval!.hash).not.toBe(b.approval!.hash);
    // The copied capability keeps the lexeme: its canonical form says 150.0.
    expect(canonicalize(a.approval!.capability)).toBe('{"amount":150.0,"order":"A1"}');
    expect(canonicalize(b.approval!.capability)).toBe('{"amount":150,"order":"A1"}');

    const c = decide(refunds, { tool: 'send', args: parsed('{"n":1.0}') }, who);
    const e = decide(refunds, { tool: 'send', args: parsed('{"n":1}') }, who);
    expect(c.approval!.hash).not.toBe(e.approval!.hash);
    expect(c.approval!.hash).toBe(
      approvalHash({
        tool: 'send',
        args: c.approval!.capability['args'] as JsonObject,
        kind: 'remote_mutation',
        capability: c.approval!.capability,
        presentation: c.approval!.presentation,
      }),
    );
  });

  it('no approval unless require_approval', () => {
    for (const tool of ['read', 'wipe', 'purge'])
      expect(decide(refunds, { tool, args: {} }, who).approval).toBeUndefined();
    expect(decide(refunds, { tool: 'refund', args: { order: 'A1', amount: 5 } }, who)).toMatchObject({
      decision: 'allow',
    });
    expect(decide(refunds, { tool: 'refund', args: { order: 'A1', amount: 5 } }, who).approval).toBeUndefined();
  });
});

describe('several files asking for approval', () => {
  // Two files ask about `refund` in different words, a third allows it, a fourth has no opinion.
  const asking = setOf({
    'a.json': {
      policy: 'payments',
      tools: { refund: { kind: 'remote_mutation' } },
      rules: [
        {
          id: 'refund-cap',
          tools: ['refund'],
          allow: true,
          confirm: 'amount > 100',
          reason: 'refund over 100',
          approval: { kind: 'refund_over_cap', capability: ['amount'] },
        },
      ],
    },
    'b.json': {
      policy: 'risk',
      default: 'allow',
      rules: [
        { id: 'big-money', tools: ['refund'], allow: true, confirm: 'amount > 50', reason: 'risk review over 50' },
      ],
    },
    'c.json': { policy: 'ops', default: 'allow' },
  });
  const args = { order: 'A1', amount: 120 };

  it("the approval carries every requirement, in load order; reason, rule and kind are the first one's", () => {
    const d = decide(asking, { tool: 'refund', args }, who);
    expect(d).toMatchObject({ decision: 'require_approval', rule: 'refund-cap', reason: 'refund over 100' });
    expect(d.approval?.requirements).toEqual([
      {
        policy: 'payments',
        rule: 'refund-cap',
        kind: 'refund_over_cap',
        reason: 'refund over 100',
        capability: { amount: 120 },
        presentation: {},
      },
      {
        policy: 'risk',
        rule: 'big-money',
        kind: 'confirm',
        reason: 'risk review over 50',
        capability: { tool: 'refund', args },
        presentation: { tool: 'refund', args },
      },
    ]);
    expect(d.approval).toMatchObject({ kind: 'refund_over_cap', capability: { amount: 120 }, presentation: {} });
  });

  it('the hash covers all of them: {args, requirements: [{capability, kind, presentation}…], tool}', () => {
    const d = decide(asking, { tool: 'refund', args }, who);
    const shapes = d.approval!.requirements.map(({ kind, capability, presentation }) => ({
      capability,
      kind,
      presentation,
    }));
    expect(d.approval!.hash).toBe(sha256(canonicalize({ args, requirements: shapes, tool: 'refund' })));
    expect(d.approval!.hash).toBe(approvalHash({ tool: 'refund', args, requirements: shapes }));
    // Not the hash of the first requirement alone: a grant of that would not cover the second.
    expect(d.approval!.hash).not.toBe(approvalHash({ tool: 'refund', args, ...shapes[0]! }));
  });

  it('when only one file asks, the hash is exactly the one-requirement form', () => {
    const d = decide(asking, { tool: 'refund', args: { order: 'A1', amount: 70 } }, who);
    expect(d.approval?.requirements.map((r) => r.policy)).toEqual(['risk']);
    const { kind, capability, presentation } = d.approval!;
    expect(d.approval!.hash).toBe(
      approvalHash({ tool: 'refund', args: { order: 'A1', amount: 70 }, kind, capability, presentation }),
    );
  });

  it('a file whose answer is more severe than require_approval decides; nothing asks', () => {
    const denying = setOf({
      'a.json': { policy: 'p', default: 'allow', rules: [{ tools: ['x'], allow: true, confirm: true }] },
      'b.json': { policy: 'q', default: 'deny' },
    });
    const d = decide(denying, { tool: 'x', args: {} }, who);
    expect(d.decision).toBe('deny');
    expect(d.approval).toBeUndefined();
  });
});

describe('the message for the model (docs/spec.md section 5)', () => {
  it('allow', () => {
    expect(decide(refunds, { tool: 'read', args: {} }, who).message).toBe('The "read" action is allowed by policy.');
  });

  it('deny by a rule: the reason, then "Tell the user it was declined; do not retry it unchanged."', () => {
    const d = decide(refunds, { tool: 'wipe', args: {} }, who);
    expect(d.decision).toBe('deny');
    expect(d.schemaRefused).toBeUndefined();
    // The reason's own trailing period is not doubled.
    expect(d.message).toBe(
      'The "wipe" action was not approved by policy. Reason: never from an agent. Tell the user it was declined; do not retry it unchanged.',
    );
  });

  it('deny by the default', () => {
    const d = decide(refunds, { tool: 'unknown_tool', args: {} }, who);
    expect(d.message).toMatch(
      /^The "unknown_tool" action was not approved by policy\. Reason: .+\. Tell the user it was declined; do not retry it unchanged\.$/,
    );
  });

  it('deny by the schema: the reason names path and keyword, then "Correct the arguments and try again."', () => {
    const d = decide(refunds, { tool: 'refund', args: { order: 'A1', amount: 'lots' } }, who);
    expect(d).toMatchObject({ decision: 'deny', schemaRefused: true, rule: 'payments#tools.refund.schema' });
    expect(d.reason).toBe('the arguments do not match the schema of "refund": /amount must be number (keyword type)');
    expect(d.reason).not.toContain('lots');
    expect(d.message).toMatch(
      /^The "refund" action was not approved by policy\. Reason: .+\. Correct the arguments and try again\.$/,
    );
    expect(d.message.endsWith('Correct the arguments and try again.')).toBe(true);
    const missing = decide(refunds, { tool: 'refund', args: { amount: 5 } }, who);
    expect(missing.reason).toContain("/ must have required property 'order' (keyword required)");
    expect(missing.message.endsWith('Correct the arguments and try again.')).toBe(true);
  });

  it('a reason carrying a request-derived path of 200,000 spaces is trimmed in linear time', () => {
    // `/[.\s]+$/` took O(n²) on such a run (about a minute here): a body-sized key stalled the loop.
    const set = setOf({
      'n.json': {
        policy: 'notes',
        tools: { note: { kind: 'read_only', schema: { type: 'object', additionalProperties: { type: 'number' } } } },
      },
    });
    const key = `${' '.repeat(200_000)}x`;
    const d = decide(set, { tool: 'note', args: { [key]: 'text' } }, who);
    expect(d).toMatchObject({ decision: 'deny', schemaRefused: true });
    expect(d.reason).toBe('the arguments do not match the schema of "note": /* must be number (keyword type)');
    expect(d.message.endsWith(' must be number (keyword type). Correct the arguments and try again.')).toBe(true);
  });

  it('a schema refusal names only keys the schema declares: a key the model chose is `*`', () => {
    const set = setOf({
      'n.json': {
        policy: 'notes',
        tools: {
          note: {
            kind: 'read_only',
            schema: {
              type: 'object',
              properties: {
                to: { type: 'array', items: { type: 'object', additionalProperties: { type: 'string' } } },
              },
              additionalProperties: { type: 'number' },
            },
          },
        },
      },
    });
    const asKey = decide(set, { tool: 'note', args: { 'jane.doe@example.com': 'x' } }, who);
    expect(asKey.reason).toBe('the arguments do not match the schema of "note": /* must be number (keyword type)');
    expect(JSON.stringify(asKey)).not.toContain('jane');
    const nested = decide(set, { tool: 'note', args: { to: [{ ok: 'a' }, { '4111111111111111': 5 }] } }, who);
    expect(nested.reason).toBe(
      'the arguments do not match the schema of "note": /to/1/* must be string (keyword type)',
    );
    expect(JSON.stringify(nested)).not.toContain('4111');
    expect(decide(set, { tool: 'note', args: { to: 'x' } }, who).reason).toContain(
      ': /to must be array (keyword type)',
    );
  });

  it('abort: the run must stop, and why', () => {
    const d = decide(refunds, { tool: 'purge', args: {} }, who);
    expect(d.decision).toBe('abort');
    expect(d.message).toBe(
      'The "purge" action crossed a hard limit of this run (purging ends the run). Stop the run now and tell the user why; do not try to work around it.',
    );
  });

  it('require_approval: an operator must approve; wait, do not alter the call', () => {
    const d = decide(refunds, { tool: 'refund', args: { order: 'A1', amount: 500 } }, who);
    expect(d.message).toBe(
      'The "refund" action needs an operator\'s approval (refund over 100 needs an operator). Wait for the approval, then try again. Do not change the call while you wait.',
    );
  });
});

describe('reasons that say what decided (docs/spec.md section 2.2)', () => {
  it("an allow without asking never gives the rule's confirmation reason", () => {
    const d = decide(refunds, { tool: 'refund', args: { order: 'A1', amount: 40 } }, who);
    expect(d).toMatchObject({ decision: 'allow', rule: 'refund-cap', reason: 'rule "refund-cap" allows it' });
    // Asking, the same rule gives its reason.
    expect(decide(refunds, { tool: 'refund', args: { order: 'A1', amount: 400 } }, who).reason).toBe(
      'refund over 100 needs an operator',
    );
  });

  it("an allowing rule without confirm gives its own reason; a confirm-only rule's reason is only for asking", () => {
    const set = setOf({
      'p.json': {
        policy: 'p',
        default: 'deny',
        rules: [
          { id: 'reads', tools: ['lookup'], allow: true, reason: 'lookups change nothing' },
          { id: 'notes', tools: ['note'], allow: true },
          { id: 'ask-notes', tools: ['note'], confirm: 'length > 100', reason: 'a long note needs a look' },
        ],
      },
    });
    expect(decide(set, { tool: 'lookup', args: {} }, who)).toMatchObject({
      decision: 'allow',
      reason: 'lookups change nothing',
    });
    expect(decide(set, { tool: 'note', args: { length: 5 } }, who)).toMatchObject({
      decision: 'allow',
      rule: 'notes',
      reason: 'rule "notes" allows it',
    });
    expect(decide(set, { tool: 'note', args: { length: 500 } }, who)).toMatchObject({
      decision: 'require_approval',
      rule: 'ask-notes',
      reason: 'a long note needs a look',
      approval: { kind: 'confirm' },
    });
  });

  it('a default names an environment only when the file declares environments', () => {
    const plain = setOf({ 'p.json': { policy: 'p', default: 'deny' } }, 'dev');
    expect(decide(plain, { tool: 't', args: {} }, who).reason).toBe('no rule matched; the default is deny');
    const declared = setOf(
      { 'p.json': { policy: 'p', environments: ['dev', 'prod'], default: { dev: 'allow', prod: 'deny' } } },
      'prod',
    );
    expect(decide(declared, { tool: 't', args: {} }, who).reason).toBe('no rule matched; the default in prod is deny');
    expect(
      decide(setOf({ 'p.json': { policy: 'p', default: 'allow' } }, 'dev'), { tool: 't', args: {} }, who).reason,
    ).toBe('no rule matched; the default is allow');
  });
});

describe('the policies list', () => {
  it('names every loaded file in load order with policy, version (when given) and digest', () => {
    const a = { policy: 'alpha', version: '7', default: 'allow' };
    const b = { policy: 'beta', default: 'allow' };
    const set = setOf({ 'b.json': b, 'a.json': a });
    const d = decide(set, { tool: 'x', args: {} }, who);
    expect(d.policies).toEqual([
      { policy: 'alpha', version: '7', digest: sha256(canonicalize(a as unknown as JsonValue)) },
      { policy: 'beta', digest: sha256(canonicalize(b as unknown as JsonValue)) },
    ]);
    expect(Object.hasOwn(d.policies[1]!, 'version')).toBe(false);
    // Every decision carries the same list, whatever decided it.
    for (const tool of ['y', 'z']) expect(decide(set, { tool, args: {} }, who).policies).toEqual(d.policies);
  });

  it('the digest is of the parsed content: the same policy in YAML and in JSON has the same digest', () => {
    const yaml = setOf({ 'p.yaml': 'policy: p\nversion: "1"\ndefault: deny\nrules:\n  - {tools: [a], allow: true}\n' });
    const json = setOf({
      'p.json': '{ "rules": [ { "allow": true, "tools": ["a"] } ], "default": "deny", "version": "1", "policy": "p" }',
    });
    const dy = decide(yaml, { tool: 'a', args: {} }, who);
    const dj = decide(json, { tool: 'a', args: {} }, who);
    expect(dy.policies).toEqual(dj.policies);
    expect(dy.policies[0]!.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('with no file, the list is empty and the built-in default decides', () => {
    const d = decide(buildPolicySet([], {}), { tool: 'x', args: {} }, who);
    expect(d).toMatchObject({ decision: 'deny', rule: 'builtin#default', policies: [] });
  });
});

describe('internal errors fail closed', () => {
  const broken: PolicySet = {
    files: refunds.files,
    env: null,
    identities: refunds.identities,
    digests: refunds.digests,
    limits: [],
    plan(): never {
      throw new Error('boom VALUE-secret');
    },
  };

  it('a PolicySet whose plan() throws: decide answers deny with internalError and does not throw', () => {
    const d = decide(broken, { tool: 'read', args: { x: 'VALUE-1' } }, who);
    expect(d.decision).toBe('deny');
    expect(d.internalError).toBe(true);
    expect(d.rule).toBe('internal');
    expect(d.reason.length).toBeGreaterThan(0);
    expect(d.message).toContain('was not approved by policy');
    expect(d.approval).toBeUndefined();
    expect(d.policies).toEqual(refunds.identities);
    expect(`${d.reason} ${d.message}`).not.toMatch(/boom|VALUE-/);
  });

  it('explain does the same, with a trace', () => {
    const ex = explain(broken, { tool: 'read', args: {} }, who);
    expect(ex).toMatchObject({ decision: 'deny', internalError: true, rule: 'internal' });
    expect(ex.trace.tool).toBe('read');
  });

  it('a plan that is not what decide expects (a value that cannot be evaluated) is an internal deny too', () => {
    const odd: PolicySet = {
      ...broken,
      plan: () =>
        ({
          tool: 'read',
          entry: null,
          kind: 'unknown',
          tags: new Set(),
          files: [{ rules: [null], guards: [] }],
        }) as never,
    };
    expect(decide(odd, { tool: 'read', args: {} }, who)).toMatchObject({ decision: 'deny', internalError: true });
  });

  it('arguments that cannot be hashed (not JSON: a bigint, NaN) are an internal deny where a hash is needed', () => {
    for (const bad of [10n, Number.NaN, Number.POSITIVE_INFINITY]) {
      const req = { tool: 'send', args: { n: bad } } as unknown as DecideRequest;
      const d = decide(refunds, req, who);
      expect(d).toMatchObject({ decision: 'deny', internalError: true });
    }
  });
});

describe('the plan cache is bounded and stays correct', () => {
  it('20,000 distinct tool names decide correctly, before and after eviction', () => {
    const set = setOf({
      'p.json': {
        policy: 'p',
        tools: { 'n_*': { kind: 'read_only' } },
        rules: [
          { id: 'no-sevens', tools: ['n_*7'], allow: false },
          { id: 'ask-nines', tools: ['n_*9'], allow: true, confirm: true },
        ],
      },
    });
    const want = (i: number): string => (i % 10 === 7 ? 'deny' : i % 10 === 9 ? 'require_approval' : 'allow');
    const firstPlan = set.plan('n_0');
    for (let i = 0; i < 20_000; i++) expect(decide(set, { tool: `n_${i}`, args: {} }, who).decision).toBe(want(i));
    // The earliest names were evicted (the cache is bounded) and are recomputed correctly.
    expect(set.plan('n_0')).not.toBe(firstPlan);
    for (let i = 0; i < 200; i++) expect(decide(set, { tool: `n_${i}`, args: {} }, who).decision).toBe(want(i));
    // A recent name is memoised.
    expect(set.plan('n_19999')).toBe(set.plan('n_19999'));
    // Names outside the catalogue are unknown, also after all that.
    expect(decide(set, { tool: 'other', args: {} }, who)).toMatchObject({ decision: 'deny', rule: 'p#default' });
  });
});

describe('a 10,000-rule set', () => {
  const N = 10_000;
  const rules: unknown[] = [];
  for (let i = 0; i < N; i++) {
    const tool = `tool_${i}`;
    switch (i % 4) {
      case 0:
        rules.push({ id: `r${i}`, tools: [tool], allow: true });
        break;
      case 1:
        rules.push({ id: `r${i}`, tools: [tool], allow: false });
        break;
      case 2:
        rules.push({ id: `r${i}`, tools: [tool], abort: true });
        break;
      default:
        rules.push({ id: `r${i}`, tools: [tool], allow: true, confirm: `a > ${i}` });
    }
  }
  // Rules that reach many tools: a glob with a when, and a rule with no tools at all for one team.
  rules.push({ id: 'glob-deny', tools: ['tool_12*'], when: 'a > 1000000', allow: false });
  rules.push({ id: 'team-deny', teams: ['blocked'], allow: false });
  const set = setOf({
    'big.json': { policy: 'big', default: 'deny', tools: { 'tool_*': { kind: 'local_mutation' } }, rules },
  });

  it('decides each kind of rule correctly, by index, glob and caller selectors', () => {
    expect(set.files[0]!.rules).toHaveLength(N + 2);
    const check = (i: number, args: JsonObject, decision: string, rule: string, id: Identity = who): void => {
      expect(decide(set, { tool: `tool_${i}`, args }, id), `tool_${i}`).toMatchObject({ decision, rule });
    };
    check(0, {}, 'allow', 'r0');
    check(1, {}, 'deny', 'r1');
    check(2, {}, 'abort', 'r2');
    check(3, { a: 1 }, 'allow', 'r3');
    check(3, { a: 4 }, 'require_approval', 'r3');
    check(9_999, { a: 10_000 }, 'require_approval', 'r9999');
    check(9_999, { a: 5 }, 'allow', 'r9999');
    check(9_998, {}, 'abort', 'r9998');
    check(4_001, {}, 'deny', 'r4001');
    check(1_200, { a: 1 }, 'allow', 'r1200');
    check(1_200, { a: 2_000_000 }, 'deny', 'glob-deny');
    check(1_200, {}, 'deny', 'glob-deny'); // undecidable `when` on a deny rule applies
    check(1_202, { a: 2_000_000 }, 'abort', 'r1202'); // abort beats the glob's deny
    check(0, {}, 'deny', 'team-deny', { ...who, team: 'blocked' });
    expect(decide(set, { tool: `tool_${N}`, args: {} }, who)).toMatchObject({ decision: 'deny', rule: 'big#default' });
    expect(decide(set, { tool: 'elsewhere', args: {} }, who)).toMatchObject({ decision: 'deny', rule: 'big#default' });
  });

  it('explain lists all 10,002 rules and agrees with decide', () => {
    const ex = explain(set, { tool: 'tool_7', args: { a: 100 } }, who);
    expect(ex.trace.files[0]!.rules).toHaveLength(N + 2);
    expect(ex.trace.files[0]!.rules.filter((r) => r.applies !== 'no').map((r) => r.id)).toEqual(['r7']);
    const { trace: _t, ...rest } = ex;
    expect(rest).toEqual(decide(set, { tool: 'tool_7', args: { a: 100 } }, who));
  });
});
