// The strings a property generator draws for what conditions test (src/policy/probes.ts), and the
// properties that could not be broken before it: `argv(command) startswith [...]` over random text.
import fc from 'fast-check';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileCondition } from '../../src/policy/condition/compile.js';
import { ASSIGNMENT, RESERVED_FIRST_WORDS, shellWords } from '../../src/policy/condition/shell.js';
import { runPolicyTests } from '../../src/policy/cases.js';
import { compileGlob } from '../../src/policy/glob.js';
import { commandOf, globInstances, samplesArbitrary, samplesOf } from '../../src/policy/probes.js';
import { runs } from '../helpers/runs.js';

describe('samplesOf', () => {
  it('turns argv tests into command templates and words, path tests into paths, globs into strings they match', () => {
    const c = compileCondition(
      'argv(command) startswith ["git", "status"] or argv(command).1 == "-n" or any(argv(command), w, w matches "--ou*") or path(file) startswith "/repo/"',
    );
    const s = samplesOf(c.tests);
    expect(s.get('command')).toEqual({
      values: [],
      templates: [
        ['git', 'status'],
        ['x', '-n'],
      ],
      words: ['--ou', '--oua', '--oua/b'],
    });
    expect(s.get('file')?.values).toEqual(['/repo/', '/a/../repo/', 'repo/', '/repo/x', '/a/../repo/x', 'repo/x']);
  });

  it('takes a $context value from the property, and puts path globs under the directories paths must be in', () => {
    const c = compileCondition('path(f) startswith $context.dir and path(f) matches "*/.git/*"');
    expect(samplesOf(c.tests).get('f')?.values).not.toContain('/srv/p/.git/');
    expect(samplesOf(c.tests, { dir: '/srv/p/' }).get('f')?.values).toContain('/srv/p/.git/');
  });

  it('every glob instance matches its glob', () => {
    for (const g of ['*.ssh*', '--ou*', '-*[rRd]*', 'a?[!x-z]b*', '*/.git/*']) {
      const glob = compileGlob(g);
      for (const s of globInstances(g)) expect(glob.test(s), `${g}: ${s}`).toBe(true);
    }
  });

  it('commandOf quotes words so that argv() gives them back, whatever the quoting chosen', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.string({ minLength: 1, maxLength: 8 }).filter((w) => !/[\0-\x1f\x7f]/.test(w)),
          { minLength: 1, maxLength: 4 },
        ),
        fc.nat(),
        (words, q) => {
          // A first word like NAME=value or NAME+=value, or one bash reserves (time, if…), is refused by
          // argv() even quoted (a shell would set a variable, or run the words after it).
          fc.pre(!ASSIGNMENT.test(words[0]!) && !RESERVED_FIRST_WORDS.has(words[0]!));
          expect(shellWords(commandOf(words, q))).toEqual(words);
        },
      ),
      { numRuns: runs(100) },
    );
  });

  it('draws commands that start with a template, quoted in several ways', () => {
    const arb = samplesArbitrary(samplesOf(compileCondition('argv(c) startswith ["git", "status"]').tests).get('c')!)!;
    const drawn = fc.sample(arb, { seed: 7, numRuns: 200 });
    expect(drawn.some((cmd) => shellWords(cmd)?.slice(0, 2).join(' ') === 'git status')).toBe(true);
    expect(drawn.some((cmd) => cmd.includes('""') && shellWords(cmd)?.[0] === 'git')).toBe(true);
    expect(drawn.some((cmd) => shellWords(cmd) === undefined)).toBe(true);
  });
});

describe('never properties reach what the rules test', () => {
  const dir = (files: Record<string, string>): string => {
    const d = mkdtempSync(join(tmpdir(), 'gatehouse-probes-'));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(d, name), text);
    return d;
  };
  const SHELL = `
policy: shell
default: deny
tools:
  shell_exec: {kind: local_mutation, schema: {type: object, required: [command], properties: {command: {type: string}}}}
rules:
  - {id: git-read, tools: [shell_exec], when: 'argv(command).0 == "git" and argv(command).1 == "status"', allow: true}
`;

  it('"shell is never allowed" breaks on `git status`', async () => {
    const d = dir({
      'p.yaml': SHELL,
      'p.test.yaml': `never:
  - {name: shell is never allowed, tools: shell_exec, decision: allow, runs: 10000}
  - {name: only git status is allowed, tools: shell_exec, when: 'argv(command).0 == "git" and argv(command).1 != "status"', decision: allow}
`,
    });
    try {
      const { properties, problems } = await runPolicyTests(d);
      expect(problems).toEqual([]);
      const c = properties[0]!.failures[0]?.counterexample;
      expect(c?.got.rule).toBe('git-read');
      expect(shellWords(c!.args.command as string)?.slice(0, 2)).toEqual(['git', 'status']);
      // Tried where it could fail (git-read's test held on some requests), and it holds: no warning.
      expect(properties[1]!.failures.map((f) => [f.counterexample?.args, f.problem])).toEqual([]);
      expect(properties[1]!.warnings).toEqual([]);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('a property no generated request could break says so, naming the rules', async () => {
    const d = dir({
      'p.yaml': SHELL,
      'p.test.yaml': `never:
  - {name: only one command, tools: shell_exec, when: 'command == "make"', decision: allow}
  - {name: nothing matches, tools: shell_exec, when: 'len(command) > 100000', decision: allow}
  - {name: nothing but git, tools: shell_exec, when: 'argv(command).0 != "git"', decision: allow}
`,
    });
    try {
      const { properties } = await runPolicyTests(d);
      expect(properties.map((p) => p.failures.length)).toEqual([0, 0, 0]);
      expect(properties[0]!.warnings).toEqual([
        'shell_exec: no generated request reached a rule that can answer allow ("git-read" (shell)): no request generated could have broken the property',
      ]);
      expect(properties[1]!.warnings).toEqual([
        'shell_exec: `when` held for none of the 100 generated requests: the property checked nothing there',
      ]);
      // git-read's second test held on some of them (`x status`): tried where it could fail, no warning.
      expect(properties[2]!.warnings).toEqual([]);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});
