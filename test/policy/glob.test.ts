import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { compileGlob, GlobError, globAtoms } from '../../src/policy/glob.js';
import { runs } from '../helpers/runs.js';

function globError(pattern: string): GlobError {
  try {
    compileGlob(pattern);
  } catch (err) {
    if (err instanceof GlobError) return err;
    throw err;
  }
  throw new Error(`expected ${JSON.stringify(pattern)} to be refused`);
}

describe('matching', () => {
  const cases: [pattern: string, yes: string[], no: string[]][] = [
    ['refund', ['refund'], ['Refund', 'refund2', 'refun', '', 're fund']],
    [
      'lookup_*',
      ['lookup_', 'lookup_order', 'lookup_a/b.c', 'lookup_.hidden'],
      ['lookup', 'xlookup_order', 'Lookup_x'],
    ],
    ['*', ['', 'a', 'a/b', '.dot', 'x'.repeat(300)], []],
    ['*_delete', ['user_delete', '_delete', 'a/b_delete'], ['user_delete_all', 'delete']],
    ['github__*', ['github__create_issue', 'github__'], ['github_create', 'gitlab__x']],
    ['a*b*c', ['abc', 'aXbYc', 'abbbc', 'a/b.c', 'acbc'], ['ab', 'acb', 'abcd']],
    ['?', ['a', '/', '.'], ['', 'ab']],
    ['file_?', ['file_a', 'file_1'], ['file_', 'file_ab']],
    ['??*', ['ab', 'abc'], ['a', '']],
    ['[abc]x', ['ax', 'bx', 'cx'], ['dx', 'x', 'abx']],
    ['tool_[a-c0-9]', ['tool_a', 'tool_c', 'tool_5'], ['tool_d', 'tool_A', 'tool_', 'tool_ab']],
    ['[!a-c]x', ['dx', 'Ax', '/x'], ['ax', 'cx', 'x']],
    ['[^a-c]x', ['dx'], ['bx']],
    ['[]]x', [']x'], ['x', 'ax']],
    ['[!]]x', ['ax'], [']x']],
    ['[]a]', [']', 'a'], ['b']],
    ['[a-]', ['a', '-'], ['b']],
    ['[-a]', ['a', '-'], ['b']],
    ['[*?]', ['*', '?'], ['a']],
    ['mcp.*.read', ['mcp.fs.read', 'mcp..read', 'mcp.a.b.read'], ['mcp.read', 'mcpx.fs.read']],
    ['é*', ['été'], ['ete']],
    ['*\u{1F600}', ['x\u{1F600}'], ['x']],
    ['?x', ['\ud83dx'], ['\u{1F600}x']], // ? is one UTF-16 unit; the emoji is two
    ['??', ['\u{1F600}'], []],
  ];
  it.each(cases)('%j', (pattern, yes, no) => {
    const g = compileGlob(pattern);
    for (const name of yes) expect(g.test(name), `${pattern} should match ${name}`).toBe(true);
    for (const name of no) expect(g.test(name), `${pattern} should not match ${name}`).toBe(false);
  });

  it('marks literal patterns', () => {
    expect(compileGlob('refund').literal).toBe(true);
    expect(compileGlob('a.b-c/d!').literal).toBe(true);
    expect(compileGlob('lookup_*').literal).toBe(false);
    expect(compileGlob('a?').literal).toBe(false);
    expect(compileGlob('[ab]').literal).toBe(false);
    expect(compileGlob('lookup_*').source).toBe('lookup_*');
  });

  it('is frozen', () => {
    expect(Object.isFrozen(compileGlob('a*'))).toBe(true);
  });

  it('agrees with a reference matcher on random input', () => {
    // Reference: the textbook dynamic program over the same atoms (small alphabet so matches happen).
    const patternChar = fc.constantFrom('a', 'b', '*', '?', '[ab]', '[!a]');
    fc.assert(
      fc.property(
        fc.array(patternChar, { minLength: 1, maxLength: 8 }),
        fc.string({ unit: fc.constantFrom('a', 'b', 'c'), maxLength: 10 }),
        (parts, name) => {
          const pattern = parts.join('');
          if (pattern.includes('**')) return;
          expect(compileGlob(pattern).test(name)).toBe(reference(parts, name));
        },
      ),
      { numRuns: runs(3000) },
    );
  });
});

function reference(parts: string[], name: string): boolean {
  const one = (p: string, c: string): boolean =>
    p === '?' ? true : p === '[ab]' ? c === 'a' || c === 'b' : p === '[!a]' ? c !== 'a' : p === c;
  const memo = new Map<string, boolean>();
  const go = (i: number, j: number): boolean => {
    const key = `${i},${j}`;
    const hit = memo.get(key);
    if (hit !== undefined) return hit;
    let r: boolean;
    if (i === parts.length) r = j === name.length;
    else if (parts[i] === '*') r = go(i + 1, j) || (j < name.length && go(i, j + 1));
    else r = j < name.length && one(parts[i] ?? '', name[j] ?? '') && go(i + 1, j + 1);
    memo.set(key, r);
    return r;
  };
  return go(0, 0);
}

describe('refused patterns', () => {
  const cases: [pattern: string, index: number, message: RegExp][] = [
    ['', 0, /empty/],
    ['a**', 1, /'\*\*'/],
    ['**', 0, /'\*\*'/],
    ['a/**/b', 2, /'\*\*'/],
    ['{a,b}', 0, /braces/],
    ['a}', 1, /braces/],
    ['tool(1)', 4, /groups/],
    ['a)', 1, /^groups are not supported \(at index 1\)$/],
    ['a|b', 1, /alternatives/],
    ['a\\*', 1, /escapes/],
    ['[abc', 0, /unclosed '\['/],
    ['x[a-', 1, /unclosed '\['/],
    ['x[', 1, /unclosed '\['/],
    ['[]', 0, /empty character class/],
    ['[!]', 0, /empty character class/],
    ['a[]b', 1, /empty character class/],
    ['[z-a]', 1, /reversed range/],
    ['[a[b]', 2, /'\[' inside a character class/],
    ['[a{]', 2, /not supported/],
    ...['}', '(', ')', '|', '\\'].map((c): [string, number, RegExp] => [
      `[a${c}]`,
      2,
      new RegExp(`^'\\${c}' is not supported in a tool glob`),
    ]),
    ['[a-\\]', 3, /not supported/],
    ['a]', 1, /without a matching '\['/],
    ['!tool', 0, /negated/],
    ['a\nb', 1, /control characters/],
    ['a\u0000', 1, /control characters/],
    ['a'.repeat(257), 256, /at most 256/],
  ];
  it.each(cases)('%j at index %i', (pattern, index, message) => {
    const err = globError(pattern);
    expect(err.name).toBe('GlobError');
    expect(err.index).toBe(index);
    expect(err.message).toMatch(message);
  });

  it('accepts 256 characters', () => {
    expect(compileGlob('a'.repeat(255) + '*').test('a'.repeat(300))).toBe(true);
  });

  it('never throws anything but GlobError', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), (pattern) => {
        try {
          compileGlob(pattern).test(pattern);
        } catch (err) {
          expect(err).toBeInstanceOf(GlobError);
        }
      }),
      { numRuns: runs(3000) },
    );
  });
});

describe('adversarial input', () => {
  it('a 10,000-character name against *a*a*a*a*a*b completes and does not match', () => {
    const g = compileGlob('*a*a*a*a*a*b');
    expect(g.test('a'.repeat(10_000))).toBe(false);
    expect(g.test('a'.repeat(10_000) + 'b')).toBe(true);
  });

  it('a long pattern of stars and classes against a long name completes', () => {
    const pattern = '*[ab]?'.repeat(40) + 'c';
    expect(pattern.length).toBeLessThanOrEqual(256);
    expect(compileGlob(pattern).test('ab'.repeat(50_000))).toBe(false);
  });
});

describe('globAtoms', () => {
  it('gives the compiled steps of a pattern', () => {
    expect(globAtoms('a?*[!b-d]')).toEqual([
      { type: 'char', code: 0x61 },
      { type: 'any' },
      { type: 'star' },
      { type: 'class', negated: true, ranges: [0x62, 0x64] },
    ]);
  });
});
