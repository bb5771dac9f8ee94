// Who may answer an approval and how many (docs/spec.md sections 2.4 and 4.3): the policy keys, their
// load errors (file, line, key), the requirement they give and the hash they enter.
import { describe, expect, it } from 'vitest';
import { approvalHash, canonicalize, sha256 } from '../../src/json/canonical.js';
import type { JsonObject } from '../../src/json/value.js';
import { decide } from '../../src/policy/decide.js';
import { PolicyLoadError, type LoadProblem } from '../../src/policy/errors.js';
import { buildPolicySet } from '../../src/policy/load.js';
import type { DecisionResult, PolicySet } from '../../src/policy/model.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const load = (text: string): PolicySet => buildPolicySet([{ path: 'p.yaml', bytes: enc(text) }], { env: null });

function problemsOf(text: string): LoadProblem[] {
  try {
    load(text);
  } catch (err) {
    expect(err).toBeInstanceOf(PolicyLoadError);
    return [...(err as PolicyLoadError).problems];
  }
  throw new Error('expected the load to fail');
}

const caller = { user: 'u1', team: 'support', agent: 'bot', roles: [] };
const ask = (set: PolicySet, args: JsonObject = { amount: 500 }): DecisionResult => {
  const result = decide(set, { tool: 'refund', args }, caller);
  expect(result.decision).toBe('require_approval');
  return result;
};

const RULE = (approval: string): string =>
  `policy: p\ntools:\n  refund: {kind: remote_mutation}\nrules:\n  - id: big\n    tools: [refund]\n    allow: true\n    confirm: true\n    approval: ${approval}\n`;

describe('approval eligibility keys', () => {
  it.each([
    ['an empty roles list', '{approvers: {roles: []}}', 'rules.0.approval.approvers.roles'],
    ['an empty teams list', '{approvers: {teams: []}}', 'rules.0.approval.approvers.teams'],
    ['an empty users list', '{approvers: {users: []}}', 'rules.0.approval.approvers.users'],
    ['an empty approvers block', '{approvers: {}}', 'rules.0.approval.approvers'],
    ['an unknown approvers key', '{approvers: {groups: [a]}}', 'rules.0.approval.approvers.groups'],
    ['a quorum of 0', '{quorum: 0}', 'rules.0.approval.quorum'],
    ['a quorum of 6', '{quorum: 6}', 'rules.0.approval.quorum'],
    ['a fractional quorum', '{quorum: 1.5}', 'rules.0.approval.quorum'],
    ['an unknown separation', '{separate_from_requester: user}', 'rules.0.approval.separate_from_requester'],
  ])('%s is a load error naming file, line and key', (_name, approval, key) => {
    const problems = problemsOf(RULE(approval));
    expect(problems.length, JSON.stringify(problems)).toBeGreaterThan(0);
    const p = problems.find((x) => x.key === key);
    expect(p, JSON.stringify(problems)).toBeDefined();
    expect(p).toMatchObject({ file: 'p.yaml', line: 9 });
  });

  it('an `approval` block on a catalogue entry without confirm is a load error', () => {
    const problems = problemsOf(
      'policy: p\ntools:\n  refund:\n    kind: remote_mutation\n    approval: {quorum: 2}\nrules: []\n',
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ file: 'p.yaml', line: 5, key: 'tools.refund.approval' });
    expect(problems[0]!.message).toMatch(/confirm/);
  });

  it("an empty list in a catalogue entry's approvers is a load error naming it", () => {
    const problems = problemsOf(
      'policy: p\ntools:\n  refund:\n    kind: remote_mutation\n    confirm: true\n    approval:\n      approvers: {users: []}\n',
    );
    expect(problems.find((p) => p.key === 'tools.refund.approval.approvers.users')).toMatchObject({ line: 7 });
  });

  it('enter the requirement, lists sorted and without repeats; a single string is a list of one', () => {
    const set = load(
      RULE(
        '{approvers: {roles: [risk, finance, risk], teams: finance, users: [cfo]}, quorum: 2, separate_from_requester: team}',
      ),
    );
    const [r] = ask(set).approval!.requirements;
    expect(r).toMatchObject({
      rule: 'big',
      kind: 'confirm',
      approvers: { roles: ['finance', 'risk'], teams: ['finance'], users: ['cfo'] },
      quorum: 2,
      separate_from_requester: 'team',
    });
    // Eligibility alone keeps the default shape: the operator still sees the whole call.
    expect(r!.capability).toEqual({ tool: 'refund', args: { amount: 500 } });
  });

  it('an empty approval block is still an empty shape, as before eligibility existed', () => {
    const [r] = ask(load(RULE('{}'))).approval!.requirements;
    expect(r!.capability).toEqual({});
    expect(r!.presentation).toEqual({});
  });

  it('what does not narrow is left out, so the hash is the one from before eligibility existed', () => {
    const plain = ask(load(RULE('{kind: refund}'))).approval!;
    const defaults = ask(load(RULE('{kind: refund, quorum: 1, separate_from_requester: none}'))).approval!;
    expect(defaults.requirements[0]).not.toHaveProperty('quorum');
    expect(defaults.requirements[0]).not.toHaveProperty('separate_from_requester');
    expect(defaults.requirements[0]).not.toHaveProperty('approvers');
    expect(defaults.hash).toBe(plain.hash);
    expect(plain.hash).toBe(
      sha256(canonicalize({ args: { amount: 500 }, capability: {}, kind: 'refund', presentation: {}, tool: 'refund' })),
    );
  });

  it('enter the hash: each field changes it, and it is the canonical form with them', () => {
    const plain = ask(load(RULE('{kind: refund}'))).approval!.hash;
    const variants = [
      '{kind: refund, quorum: 2}',
      '{kind: refund, quorum: 3}',
      '{kind: refund, separate_from_requester: team}',
      '{kind: refund, approvers: {roles: [finance]}}',
      '{kind: refund, approvers: {teams: [finance]}}',
      '{kind: refund, approvers: {users: [finance]}}',
    ].map((a) => ask(load(RULE(a))).approval!.hash);
    expect(new Set([plain, ...variants]).size).toBe(variants.length + 1);

    const full = ask(
      load(RULE('{kind: refund, approvers: {roles: [finance]}, quorum: 2, separate_from_requester: team}')),
    ).approval!;
    expect(full.hash).toBe(
      sha256(
        canonicalize({
          approvers: { roles: ['finance'] },
          args: { amount: 500 },
          capability: {},
          kind: 'refund',
          presentation: {},
          quorum: 2,
          separate_from_requester: 'team',
          tool: 'refund',
        }),
      ),
    );
    // Recomputed from the requirement (as the store and a redeem do), the hash is the same.
    expect(approvalHash({ tool: 'refund', args: { amount: 500 }, requirements: full.requirements })).toBe(full.hash);
  });

  it('in the several-requirement form, each requirement carries its own', () => {
    const second = 'policy: q\nrules:\n  - id: q1\n    tools: [refund]\n    allow: true\n    confirm: true\n';
    const set = buildPolicySet(
      [
        { path: 'p.yaml', bytes: enc(RULE('{kind: refund, quorum: 2, approvers: {users: [cfo]}}')) },
        { path: 'q.yaml', bytes: enc(second) },
      ],
      { env: null },
    );
    const a = ask(set).approval!;
    expect(a.requirements).toHaveLength(2);
    const args = { amount: 500 };
    expect(a.hash).toBe(
      sha256(
        canonicalize({
          args,
          requirements: [
            { approvers: { users: ['cfo'] }, capability: {}, kind: 'refund', presentation: {}, quorum: 2 },
            { capability: { tool: 'refund', args }, kind: 'confirm', presentation: { tool: 'refund', args } },
          ],
          tool: 'refund',
        }),
      ),
    );
  });

  it("a catalogue entry's approval block gives confirm's requirement its kind and eligibility", () => {
    const set = load(
      'policy: p\ntools:\n  refund:\n    kind: remote_mutation\n    confirm: true\n    approval: {approvers: {roles: finance}, quorum: 2}\nrules:\n  - tools: [refund]\n    allow: true\n',
    );
    const [r] = ask(set).approval!.requirements;
    expect(r).toMatchObject({ kind: 'confirm', rule: 'p#tools.refund', approvers: { roles: ['finance'] }, quorum: 2 });
    expect(r!.presentation).toEqual({ tool: 'refund', args: { amount: 500 } });
  });
});
