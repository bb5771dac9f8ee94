// argv() and path(): the two built-ins an allowlist rests on (src/policy/condition/shell.ts).
// argv() is checked word for word, the first word included, against the two shells a runtime is
// likely to run a command with: bash, and Debian's /bin/sh (dash). Each shell runs every command
// argv() accepts, with PATH holding only programs that print their own path and arguments, so what
// it printed is what it would have run.
import { type SpawnSyncOptionsWithStringEncoding, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { normalizePath, shellWords } from '../../src/policy/condition/shell.js';
import { runs } from '../helpers/runs.js';

describe('shellWords', () => {
  it.each([
    ['git status', ['git', 'status']],
    ['  git   status  ', ['git', 'status']],
    ['git\tstatus', ['git', 'status']],
    ['', []],
    ["echo 'a b' c", ['echo', 'a b', 'c']],
    ['echo "a b"', ['echo', 'a b']],
    ['echo \'a\'"b"c', ['echo', 'abc']],
    ["echo ''", ['echo', '']],
    ['echo ""', ['echo', '']],
    ['echo a\\ b', ['echo', 'a b']],
    ['echo \\;', ['echo', ';']],
    ['echo "a\\"b"', ['echo', 'a"b']],
    ['echo "a\\\\b"', ['echo', 'a\\b']],
    ['echo "a\\b"', ['echo', 'a\\b']],
    ['echo "a\\ b"', ['echo', 'a\\ b']],
    ["echo '$HOME'", ['echo', '$HOME']],
    ["echo '\\'", ['echo', '\\']],
    ['git log HEAD~1', ['git', 'log', 'HEAD~1']],
    ['echo "a;b|c&d>e<f*g?h[i]j~k#l(m)n{o}p"', ['echo', 'a;b|c&d>e<f*g?h[i]j~k#l(m)n{o}p']],
    ['ls -- -x', ['ls', '--', '-x']],
    ['echo a=b', ['echo', 'a=b']],
    ['echo ]', ['echo', ']']],
    // A first word that is no assignment and no reserved word is the command.
    ['a+b c', ['a+b', 'c']],
    ['=a b', ['=a', 'b']],
    ['+=a b', ['+=a', 'b']],
    ['1a=b c', ['1a=b', 'c']],
    ['a-b=c d', ['a-b=c', 'd']],
    ['git status X=1 Y+=2', ['git', 'status', 'X=1', 'Y+=2']],
    ['echo time if', ['echo', 'time', 'if']],
    ['timex a', ['timex', 'a']],
    ['xtime a', ['xtime', 'a']],
    ['Time a', ['Time', 'a']],
    ['] a', [']', 'a']],
  ])('%j → %j', (command, words) => {
    expect(shellWords(command)).toEqual(words);
  });

  it.each([
    'a;b',
    'a & b',
    'a|b',
    'a<b',
    'a>b',
    'a $b',
    'a `b`',
    'a $(b)',
    '(a)',
    '{ a; }',
    'a {b}',
    'a *',
    'a ?',
    'a [b]',
    '~',
    '~/x',
    'a ~b',
    'a --x=~',
    'a PATH:~/bin',
    'a #b',
    '! a',
    'a !b',
    'a\nb',
    'a\rb',
    'a\u0000b',
    'a\u001bb',
    'a\u007fb',
    "'a",
    '"a',
    'a\\',
    'a\\\nb',
    '"a\nb"',
    "'a\nb'",
    '"$a"',
    '"`a`"',
    '"!a"',
    'X=1 a',
    '_x=1',
    // An assignment first, bash's `+=` included: the first word is not what runs.
    'git+=x rm -rf /tmp/x',
    'LD_PRELOAD+=/tmp/x.so ls',
    'X1=1 rm -rf /',
    'x9_=1 a',
    'Z=1 a',
    'X+= a',
    "X='a b' c",
    'X\\=1 a',
    '\u00e9=1 a',
    // A reserved word or keyword first, quoted or not.
    'time PAGER=x git log',
    'time',
    'coproc rm -rf /',
    ...[
      'case',
      'do',
      'done',
      'elif',
      'else',
      'esac',
      'fi',
      'for',
      'function',
      'if',
      'in',
      'select',
      'then',
      'until',
      'while',
    ].map((w) => `${w} a`),
    "'time' a",
    't"im"e a',
    'ti\\me a',
    '[[ a ]]',
    ']] a',
    '{',
    '}',
    'a }',
    'a {',
    'a)',
    '"a\\',
    // DEL and other controls inside quotes or after a backslash.
    "'a\u007fb'",
    '"a\u007fb"',
    '"a\\\u007f"',
    'a\\\u007f',
    "'a\u001fb'",
    '"a\u001fb"',
    '"a\\\u001f"',
    'a\\\u001f',
    "'\t'",
  ])('%j is not plain words', (command) => {
    expect(shellWords(command)).toBeUndefined();
  });

  it('is linear: a megabyte of words or of quotes is split at once', () => {
    const words = 'ab '.repeat(350_000);
    expect(shellWords(words)).toHaveLength(350_000);
    expect(shellWords(`'${'x'.repeat(1_000_000)}'`)).toEqual(['x'.repeat(1_000_000)]);
  });
});

describe('argv() against bash and dash', () => {
  const SHELLS = ['bash', 'dash'].map((name) => {
    const found = spawnSync('/bin/sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).stdout.trim();
    if (found === '') throw new Error(`${name} is needed to check argv() against it (Debian: apt-get install ${name})`);
    return found;
  });
  const root = mkdtempSync(`${tmpdir()}/gatehouse-argv-`);
  const bin = join(root, 'bin');
  const cwd = join(root, 'cwd');
  mkdirSync(bin);
  mkdirSync(cwd);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  // The program every first word names: it prints the path it was run by and its arguments, each
  // NUL-terminated. Written on demand, as the first words are generated.
  const made = new Set<string>();
  function program(name: string): void {
    if (made.has(name)) return;
    writeFileSync(join(bin, name), `#!/bin/sh\nprintf '%s\\0' "$0" "$@"\n`, { mode: 0o755 });
    made.add(name);
  }

  // Standard input is not a socket: bash given one reads ~/.bashrc, taking it for an ssh connection.
  const spawnOptions: SpawnSyncOptionsWithStringEncoding = {
    cwd,
    encoding: 'utf8',
    env: { PATH: bin },
    stdio: ['ignore', 'pipe', 'pipe'],
  };

  /** What `SHELL -c -- CMD` printed: [program path, ...arguments] when it ran one. */
  function run(shell: string, cmd: string): { status: number | null; stdout: string; stderr: string } {
    const out = spawnSync(shell, ['-c', '--', cmd], spawnOptions);
    return { status: out.status, stdout: out.stdout, stderr: out.stderr };
  }

  /** Checks that both shells run exactly argv(cmd); false when argv() refuses the command. */
  function agrees(cmd: string): boolean {
    const words = shellWords(cmd);
    if (words === undefined) return false;
    const [first, ...rest] = words;
    // `[` (from `\[` or `'['`) is the test builtin: the shell runs it itself, never a program on PATH.
    if (first === '[') return false;
    // The generators never put a `/` in the first word: that would name a file, not a PATH lookup.
    if (first !== undefined && first !== '') {
      expect(first).not.toContain('/');
      program(first);
    }
    for (const shell of SHELLS) {
      const out = run(shell, cmd);
      if (first === undefined) {
        expect({ shell, cmd, ...out }).toEqual({ shell, cmd, status: 0, stdout: '', stderr: '' });
      } else if (first === '') {
        // An empty command name is found nowhere: the shell runs nothing.
        expect({ shell, cmd, status: out.status, stdout: out.stdout }).toEqual({ shell, cmd, status: 127, stdout: '' });
      } else {
        const printed = out.stdout === '' ? [] : out.stdout.slice(0, -1).split('\0');
        expect({ shell, cmd, status: out.status, printed, stderr: out.stderr }).toEqual({
          shell,
          cmd,
          status: 0,
          printed: [join(bin, first), ...rest],
          stderr: '',
        });
      }
    }
    return true;
  }

  // Characters a shell treats specially, and a few ordinary ones, so that accepted commands are
  // common. No `/` (see agrees()), and no letters beyond a and b, so that no first word names a
  // builtin but `[` (left out in agrees()); `:` (a builtin alone) only after a first word.
  const character = fc.constantFrom(
    'a',
    'b',
    ' ',
    ' ',
    "'",
    '"',
    '\\',
    ';',
    '|',
    '&',
    '$',
    '(',
    ')',
    '*',
    '?',
    '~',
    '#',
    '=',
    '+',
    '-',
    '[',
    ']',
    '{',
    '}',
    '!',
    '\t',
    '\u007f',
  );
  const characters = fc.array(character, { maxLength: 14 }).map((cs) => cs.join(''));
  const tail = fc.array(fc.oneof(character, fc.constant(':')), { maxLength: 12 }).map((cs) => cs.join(''));
  // First words a shell may read as something other than a command name: assignments, bash's
  // `+=`, reserved words and keywords, their quoted spellings, and options to the shell itself.
  const first = fc.constantFrom(
    'a',
    'ab',
    'git',
    '-a',
    '+a',
    '--',
    '=a',
    '+=a',
    'a+b',
    'a=',
    'a+=',
    'X1=1',
    'X+=1',
    'git+=x',
    '_x+=y',
    'a\\=b',
    "'a'=b",
    'a"+="b',
    'time',
    'coproc',
    'if',
    'then',
    'for',
    'in',
    'while',
    'until',
    'do',
    'done',
    'case',
    'esac',
    'select',
    'function',
    'fi',
    'elif',
    'else',
    '[[',
    ']]',
    '!',
    '{',
    '}',
    "'time'",
    't"im"e',
    'ti\\me',
    '\\!',
    "'{'",
  );
  const commands = fc
    .tuple(first, fc.constantFrom(' ', '\t', ''), tail)
    .map(([head, gap, tail]) => `${head}${gap}${tail}`);

  it.each([
    'git status',
    'git log --oneline HEAD~3',
    "git diff -- 'my file.txt'",
    '  a   b  ',
    'a\tb',
    '"a b" c',
    "'' a",
    '',
    '-a b',
    '+a b',
    '-- a',
    '=a b',
    'a+b c',
    'a X=1',
    'a X+=1',
    'a time',
    '\'a\' "b" c\\ d',
    'a "\\$" "\\`" "\\"" "\\\\" "\\a"',
    'a:b c:d',
  ])('%j: both shells run exactly the words argv() gives', (cmd) => {
    expect(agrees(cmd)).toBe(true);
  });

  it.each([
    ['git+=x rm -rf /tmp/x', ['rm', '-rf', '/tmp/x']],
    ['X1=1 rm -rf /tmp/x', ['rm', '-rf', '/tmp/x']],
    ['time a b', ['a', 'b']],
  ])('%j is refused: bash runs %j', (cmd, runs) => {
    // Without the refusal, argv() would have named a first word that never runs.
    for (const name of [...cmd.split(' ').slice(0, 1), runs[0]!]) program(name);
    const out = run(SHELLS[0]!, cmd);
    expect(out.stdout.slice(0, -1).split('\0')).toEqual([join(bin, runs[0]!), ...runs.slice(1)]);
    expect(shellWords(cmd)).toBeUndefined();
  });

  it('a command starting with - or + is read as options to the shell without --', () => {
    for (const shell of SHELLS) {
      for (const cmd of ['-a b', '+a b']) {
        const out = spawnSync(shell, ['-c', cmd], spawnOptions);
        expect({ shell, cmd, status: out.status, stdout: out.stdout }).toEqual({ shell, cmd, status: 2, stdout: '' });
      }
    }
  });

  // About one generated command in seven is accepted: fewer than 500 would make the count below a
  // coin toss. The 500 take under a second (most commands are refused before any shell runs), so
  // the knob only ever raises them.
  const GENERATED = runs(500, 500);

  it('generated commands: both shells run exactly the words argv() gives', () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.oneof(characters, commands), (cmd) => {
        if (agrees(cmd)) accepted++;
      }),
      { numRuns: GENERATED },
    );
    // At least one command in ten is one argv() accepts (the check is not vacuous).
    expect(accepted).toBeGreaterThan(GENERATED / 10);
    expect(readdirSync(cwd)).toEqual([]); // nothing was written by a redirection
  });
});

describe('normalizePath', () => {
  it.each([
    ['/', '/'],
    ['/a/b', '/a/b'],
    ['/a/./b', '/a/b'],
    ['/a/../b', '/b'],
    ['//a//b', '/a/b'],
    ['/a/b/', '/a/b/'],
    ['/a/b/.', '/a/b'],
    ['/a/..', '/'],
    ['/a/b/../..', '/'],
    ['/a\\b', '/a\\b'],
    ['/%2e%2e/x', '/%2e%2e/x'],
    ['/...', '/...'],
  ])('%j → %j', (p, want) => {
    expect(normalizePath(p)).toBe(want);
  });

  it.each(['', 'a', './a', '../a', ' /a', '~/a', '/..', '/../a', '/a/../..', '/a/../../b', '/a\u0000b', 'C:/a', '\\a'])(
    '%j is undecidable',
    (p) => {
      expect(normalizePath(p)).toBeUndefined();
    },
  );

  it('agrees with path.posix.normalize wherever it does not climb above /', () => {
    const segment = fc.constantFrom('a', 'b', '.', '..', '', 'c.d');
    const path = fc.array(segment, { maxLength: 8 }).map((s) => `/${s.join('/')}`);
    fc.assert(
      fc.property(path, (p) => {
        const ours = normalizePath(p);
        if (ours === undefined) return;
        expect(ours).toBe(posix.normalize(p));
      }),
      { numRuns: runs(2000) },
    );
  });
});
