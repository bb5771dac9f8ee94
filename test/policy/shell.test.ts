// argv() and path(): the two built-ins an allowlist rests on (src/policy/condition/shell.ts).
// argv() is checked word for word against a real POSIX shell (Debian's /bin/sh, dash) on every
// command it accepts: the shell, asked to print the words, must print exactly those.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { posix } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { normalizePath, shellWords } from '../../src/policy/condition/shell.js';

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
    ["echo '$HOME'", ['echo', '$HOME']],
    ["echo '\\'", ['echo', '\\']],
    ['git log HEAD~1', ['git', 'log', 'HEAD~1']],
    ['echo "a;b|c&d>e<f*g?h[i]j~k#l(m)n{o}p"', ['echo', 'a;b|c&d>e<f*g?h[i]j~k#l(m)n{o}p']],
    ['ls -- -x', ['ls', '--', '-x']],
    ['echo a=b', ['echo', 'a=b']],
    ['echo ]', ['echo', ']']],
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
  ])('%j is not plain words', (command) => {
    expect(shellWords(command)).toBeUndefined();
  });

  it('is linear: a megabyte of words or of quotes is split at once', () => {
    const words = 'ab '.repeat(350_000);
    expect(shellWords(words)).toHaveLength(350_000);
    expect(shellWords(`'${'x'.repeat(1_000_000)}'`)).toEqual(['x'.repeat(1_000_000)]);
  });

  describe('against a real shell', () => {
    const cwd = mkdtempSync(`${tmpdir()}/gatehouse-sh-`);
    afterAll(() => rmSync(cwd, { recursive: true, force: true }));
    // Characters a shell treats specially, and a few ordinary ones, so that accepted commands are common.
    const alphabet = fc.constantFrom(
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
      '-',
      '[',
      ']',
      '{',
      '}',
      '!',
      '\t',
    );
    const command = fc.array(alphabet, { maxLength: 14 }).map((cs) => cs.join(''));

    it('prints exactly the words argv() gives, for every command argv() accepts', () => {
      let accepted = 0;
      fc.assert(
        fc.property(command, (cmd) => {
          const words = shellWords(cmd);
          if (words === undefined) return;
          accepted++;
          // printf repeats its format for every argument: one NUL-terminated line per word.
          const out = spawnSync('/bin/sh', ['-c', `printf '%s\\0' ${cmd}`], { cwd, encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } });
          expect(out.stderr).toBe('');
          const printed = out.stdout === '' ? [] : out.stdout.slice(0, -1).split('\0');
          // With no argument, printf prints its format once, with an empty word.
          expect(printed).toEqual(words.length === 0 ? [''] : words);
        }),
        { numRuns: 400 },
      );
      expect(accepted).toBeGreaterThan(50);
      expect(readdirSync(cwd)).toEqual([]); // nothing was written by a redirection
    });
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

  it.each(['', 'a', './a', '../a', ' /a', '~/a', '/..', '/../a', '/a/../..', '/a/../../b', '/a\u0000b', 'C:/a', '\\a'])('%j is undecidable', (p) => {
    expect(normalizePath(p)).toBeUndefined();
  });

  it('agrees with path.posix.normalize wherever it does not climb above /', () => {
    const segment = fc.constantFrom('a', 'b', '.', '..', '', 'c.d');
    const path = fc.array(segment, { maxLength: 8 }).map((s) => `/${s.join('/')}`);
    fc.assert(
      fc.property(path, (p) => {
        const ours = normalizePath(p);
        if (ours === undefined) return;
        expect(ours).toBe(posix.normalize(p));
      }),
      { numRuns: 2000 },
    );
  });
});
