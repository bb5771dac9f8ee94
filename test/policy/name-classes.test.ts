// The names a glob entry alone describes, classed by the selector globs that match them
// (src/policy/name-classes.ts): each class's shortest name, names only a request may carry, and
// every name of the space in the class of one of the names found.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileGlob } from '../../src/policy/glob.js';
import { globNameArbitrary } from '../../src/policy/glob-names.js';
import { nameClasses, type NameSpace } from '../../src/policy/name-classes.js';
import { TOOL_NAME_PATTERN } from '../../src/policy/request.js';
import { runs } from '../helpers/runs.js';

const TOOL_NAME = new RegExp(TOOL_NAME_PATTERN);
const space = (glob: string, excluded: string[] = [], selectors: string[] = []): NameSpace => ({
  glob,
  excluded,
  selectors,
});

describe('nameClasses', () => {
  it.each([
    ['a glob alone: its shortest name', space('lookup_*'), ['lookup_']],
    ['names another entry describes are left out', space('lookup_*', ['lookup_', 'lookup_[a-z]*']), ['lookup_0']],
    [
      'one name per class of selectors matching',
      space('lookup_*', ['lookup_order'], ['lookup_secret*', 'lookup_?', '*']),
      ['lookup_', 'lookup_a', 'lookup_secret'],
    ],
    ['selectors that match every name, or none, make one class', space('gh__*', [], ['*', 'gh__*', 'other']), ['gh__']],
    ['`*` matches across `/` and `.`', space('*', [], ['*/*', '*.*']), ['a', 'a.', 'a/', 'a./']],
    ['no `.` or `..` path segment', space('a/.*'), ['a/.a']],
    ['no `.` or `..` path segment, however reached', space('*', ['[a-z0-9A-Z_]*']), []],
    ['a first character a request may start with', space('[-.:/_]x'), ['_x']],
    ['classes by the characters they admit', space('x[!a-z]', [], ['x[0-4]']), ['x0', 'x5']],
    ['nothing when a glob described every name', space('ab*', ['a*']), []],
    ['nothing when an excluded glob matches everything', space('ab*', ['*']), []],
    ['nothing a request can name', space('-*'), []],
    ['at most 128 characters', space(`${'?'.repeat(128)}?`), []],
  ])('%s', (_what, s, names) => {
    expect(nameClasses(s)).toEqual({ names, complete: true });
  });

  it('names the longest a request may carry', () => {
    expect(nameClasses(space(`${'?'.repeat(127)}*`))).toEqual({ names: ['a'.repeat(127)], complete: true });
  });

  it('gives up past its bounds, and says so', () => {
    expect(nameClasses(space('*', [], ['a*', 'b*', 'c*']), { states: 1_000, classes: 2 })).toEqual({
      names: ['a', 'b'],
      complete: false,
    });
    expect(nameClasses(space('*x*y*z*', [], ['*a*b*']), { states: 5, classes: 64 }).complete).toBe(false);
  });

  // Random globs over a few characters: every name found is in the space, and every name of the
  // space (sampled from the glob) has the class of one of them.
  const PIECES = ['a', 'b', '_', '/', '.', '-', '*', '?', '[ab]', '[!a]', '[a-c_]'];
  const globArb = fc
    .array(fc.constantFrom(...PIECES), { minLength: 1, maxLength: 6 })
    .map((p) => p.join(''))
    .filter((g) => {
      try {
        compileGlob(g);
        return true;
      } catch {
        return false;
      }
    });

  it('every name found is in the space; every name of the space is in the class of a name found', () => {
    fc.assert(
      fc.property(
        globArb,
        fc.array(globArb, { maxLength: 2 }),
        fc.array(globArb, { maxLength: 3 }),
        fc.integer({ min: 0, max: 1000 }),
        (glob, excluded, selectors, seed) => {
          const found = nameClasses(space(glob, excluded, selectors));
          expect(found.complete).toBe(true);
          const g = compileGlob(glob);
          const ex = excluded.map(compileGlob);
          const sel = selectors.map(compileGlob);
          const inSpace = (n: string): boolean => TOOL_NAME.test(n) && g.test(n) && !ex.some((e) => e.test(n));
          const classOf = (n: string): string => sel.map((s) => (s.test(n) ? '1' : '0')).join('');
          for (const n of found.names) expect(inSpace(n), n).toBe(true);
          const classes = found.names.map(classOf);
          expect(new Set(classes).size).toBe(classes.length);
          const arb = globNameArbitrary(glob);
          if (arb === null) return;
          for (const n of fc.sample(arb, { seed, numRuns: runs(40) }))
            if (inSpace(n)) expect(classes, `${n} in ${glob}`).toContain(classOf(n));
        },
      ),
      { seed: 7, numRuns: runs(400) },
    );
  });
});
