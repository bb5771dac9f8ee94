// A restricting rule that applies only because its condition could not be decided (docs/spec.md
// section 3.5): the reason says so, and `gatehouse check` finds such rules for common inputs.
import { describe, expect, it } from 'vitest';
import { decide, explain } from '../../src/policy/decide.js';
import { buildPolicySet } from '../../src/policy/load.js';
import type { Identity, PolicySet } from '../../src/policy/model.js';
import { undecidableRules } from '../../src/policy/undecidable.js';

const who: Identity = { user: 'u1', team: null, agent: null, roles: [] };

function setOf(yaml: string): PolicySet {
  return buildPolicySet([{ path: 'p.yaml', bytes: Buffer.from(yaml) }], { env: null });
}

const SHELL = `
policy: shell
default: allow
tools:
  shell_exec: {kind: local_mutation, schema: {type: object, required: [command], properties: {command: {type: string}}}}
rules:
  - id: no-rm-rf
    tools: [shell_exec]
    when: argv(command) startswith ["rm", "-rf"]
    abort: true
    reason: rm -rf is never run by an agent
  - id: no-curl
    tools: [shell_exec]
    when: argv(command).0 == "curl"
    allow: false
    reason: no network
`;

describe('the reason of a rule applied because its condition could not be decided', () => {
  const set = setOf(SHELL);

  it('names what could not be decided, not the rule reason, in the reason and the message', () => {
    const got = decide(set, { tool: 'shell_exec', args: { command: 'git diff | head' } }, who);
    expect(got.decision).toBe('abort');
    expect(got.rule).toBe('no-rm-rf');
    expect(got.reason).not.toMatch(/never run by an agent/);
    expect(got.reason).toMatch(
      /^rule "no-rm-rf" applies because its condition could not be decided: `argv\(command\)` has no value \(/,
    );
    expect(got.message).toContain('could not be decided');
    expect(got.message).not.toMatch(/never run by an agent/);
    // Never an argument value.
    expect(got.reason).not.toContain('head');
  });

  it('keeps the rule reason where the condition held', () => {
    const got = decide(set, { tool: 'shell_exec', args: { command: 'rm -rf /' } }, who);
    expect(got).toMatchObject({ decision: 'abort', rule: 'no-rm-rf', reason: 'rm -rf is never run by an agent' });
  });

  it('prefers a rule whose condition held to one that is only undecidable, for the same answer', () => {
    const two = setOf(`
policy: p
tools: {t: {kind: local_mutation}}
rules:
  - {id: unsure, tools: [t], when: "argv(command).1 == 'x'", allow: false, reason: first}
  - {id: sure, tools: [t], when: "argv(command).0 == 'curl'", allow: false, reason: second}
`);
    const got = decide(two, { tool: 't', args: { command: 'curl' } }, who);
    expect(got).toMatchObject({ decision: 'deny', rule: 'sure', reason: 'second' });
    const only = decide(two, { tool: 't', args: { command: 'wget' } }, who);
    expect(only).toMatchObject({ decision: 'deny', rule: 'unsure' });
    expect(only.reason).toMatch(/could not be decided: `argv\(command\).1` has no value/);
  });

  it('decide and explain agree', () => {
    for (const command of ['git diff | head', 'rm -rf /', 'curl x', 'ls']) {
      const { trace: _, ...explained } = explain(set, { tool: 'shell_exec', args: { command } }, who);
      expect(explained, command).toEqual(decide(set, { tool: 'shell_exec', args: { command } }, who));
    }
  });
});

describe('undecidableRules: what gatehouse check warns about', () => {
  it('finds abort and deny rules undecidable on a pipe, a glob, a redirection or a relative path, with where they are', () => {
    const found = undecidableRules(setOf(SHELL));
    expect(found.map((u) => [u.rule.id, u.rule.whenAt, u.inputs])).toEqual([
      [
        'no-rm-rf',
        { line: 9, column: 11 },
        ['a pipe (`git diff | head`)', 'a glob (`ls *.ts`)', 'a redirection (`sort notes.txt > sorted.txt`)'],
      ],
      [
        'no-curl',
        { line: 14, column: 11 },
        ['a pipe (`git diff | head`)', 'a glob (`ls *.ts`)', 'a redirection (`sort notes.txt > sorted.txt`)'],
      ],
    ]);
    expect(found[0]!.why).toMatch(/^`argv\(command\)` has no value/);
  });

  it('leaves out rules decided for those inputs, allow rules, and rules undecidable on plain input too', () => {
    const found = undecidableRules(
      setOf(`
policy: p
tools: {t: {kind: local_mutation}, r: {kind: read_only}}
rules:
  - {id: guarded, tools: [t], when: "has(argv(command)) and argv(command).0 == 'rm'", abort: true}
  - {id: plain-words, tools: [t], when: "not has(argv(command))", allow: false}
  - {id: allows, tools: [t], when: "argv(command).0 == 'ls'", allow: true}
  - {id: raw, tools: [t], when: "command contains 'rm'", allow: false}
  - {id: absolute, tools: [r], when: "has(path(file)) and path(file) startswith '/etc/'", allow: false}
  - {id: always-unsure, tools: [t], when: "$caller.claims.tier == 'x'", allow: false}
  - {id: relative, tools: [r], when: "path(file) startswith '/etc/'", allow: false}
`),
    );
    expect(found.map((u) => [u.rule.id, u.inputs])).toEqual([['relative', ['a relative path (`src/index.ts`)']]]);
  });
});
