// Concrete names for a catalogue glob (src/policy/glob-names.ts): each one matches the glob and is a
// name the service accepts; the sample is the same for a seed, shortest first.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileGlob } from '../../src/policy/glob.js';
import { globNameArbitrary, sampleToolNames } from '../../src/policy/glob-names.js';
import { TOOL_NAME_PATTERN } from '../../src/policy/request.js';
import { runs } from '../helpers/runs.js';

const TOOL_NAME = new RegExp(TOOL_NAME_PATTERN);
const GLOBS = ['lookup_*', 'github__*', 'a?c', 'v[0-9]*', 'x[!a-z]?', 'fs/*/read', '*'];

const sample = (source: string, seed = 1, extra: Partial<Parameters<typeof sampleToolNames>[0]> = {}): string[] => {
  const glob = compileGlob(source);
  return sampleToolNames({ from: [glob], literals: [], keep: (n) => glob.test(n), seed, count: 8, ...extra });
};

describe('globNameArbitrary', () => {
  it.each(GLOBS)('writes names %s matches', (source) => {
    const glob = compileGlob(source);
    fc.assert(
      fc.property(globNameArbitrary(source)!, (name) => glob.test(name)),
      { seed: 2, numRuns: runs(200) },
    );
  });

  it('is null for a class that admits no tool-name character', () => {
    expect(globNameArbitrary('tool[ ]')).toBeNull();
    expect(globNameArbitrary('tool[ ]*')).toBeNull();
  });
});

describe('sampleToolNames', () => {
  it.each(GLOBS)('gives distinct names the service accepts and %s matches, shortest first', (source) => {
    const glob = compileGlob(source);
    const names = sample(source);
    expect(names.length).toBeGreaterThan(1);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) {
      expect(TOOL_NAME.test(name), name).toBe(true);
      expect(glob.test(name), name).toBe(true);
    }
    expect([...names].sort((a, b) => a.length - b.length || (a < b ? -1 : 1))).toEqual(names);
  });

  it('starts with the shortest name the glob writes', () => {
    expect(sample('lookup_*')[0]).toBe('lookup_');
    expect(sample('v[0-9]*')[0]).toBe('v0');
  });

  it('is the same for the same seed', () => {
    expect(sample('lookup_*', 7)).toEqual(sample('lookup_*', 7));
    expect(sample('lookup_*', 7)).not.toEqual(sample('lookup_*', 8));
  });

  it('leaves out what `keep` refuses, and adds the literals it keeps', () => {
    const glob = compileGlob('lookup_*');
    const names = sampleToolNames({
      from: [glob],
      literals: ['lookup_order', 'wipe_orders'],
      keep: (n) => glob.test(n) && n !== 'lookup_',
      seed: 3,
      count: 4,
    });
    expect(names).toContain('lookup_order');
    expect(names).not.toContain('wipe_orders');
    expect(names).not.toContain('lookup_');
    expect(names.length).toBe(4);
  });

  it('finds nothing when nothing is kept', () => {
    expect(sample('lookup_*', 1, { keep: () => false })).toEqual([]);
  });
});
