// Tool-name globs (docs/spec.md section 2): `*`, `?` and `[...]` classes, nothing else. Not picomatch: a tool
// name is not a file path (`*` must cross `/` and `.`), there are no dotfile rules, braces or extglobs,
// and matching must not go through a backtracking RegExp. Matching is the classic iterative
// star-backtracking walk over pre-tokenized atoms: at worst O(len(name) × len(pattern)).

export class GlobError extends Error {
  /** 0-based index of the offending character in the pattern. */
  readonly index: number;

  constructor(index: number, what: string) {
    super(`${what} (at index ${index})`);
    this.name = 'GlobError';
    this.index = index;
  }
}

export interface Glob {
  readonly source: string;
  /** No `*`, `?` or `[`: the pattern names one tool, and callers index it by exact name. */
  readonly literal: boolean;
  test(name: string): boolean;
}

export const MAX_GLOB_LENGTH = 256;

/** One step of a compiled glob: a character, `?`, `*` or a class. */
export type GlobAtom =
  | { readonly type: 'char'; readonly code: number }
  | { readonly type: 'any' } // ?
  | { readonly type: 'star' } // *
  | { readonly type: 'class'; readonly negated: boolean; readonly ranges: readonly number[] }; // [lo, hi, lo, hi, ...]

// Syntax other globbers give meaning to; refused rather than read literally so nobody is surprised.
const REFUSED: Readonly<Record<string, string>> = {
  '{': 'braces are not supported',
  '}': 'braces are not supported',
  '(': 'groups are not supported',
  ')': 'groups are not supported',
  '|': 'alternatives are not supported',
  '\\': 'escapes are not supported',
  ']': "']' without a matching '['",
};

export function compileGlob(pattern: string): Glob {
  if (pattern.length === 0) throw new GlobError(0, 'a tool glob cannot be empty');
  if (pattern.length > MAX_GLOB_LENGTH)
    throw new GlobError(MAX_GLOB_LENGTH, `a tool glob is at most ${MAX_GLOB_LENGTH} characters`);
  if (pattern[0] === '!') throw new GlobError(0, 'negated globs are not supported');
  const atoms = tokenize(pattern);
  const literal = atoms.every((a) => a.type === 'char');
  const source = pattern;
  return Object.freeze({
    source,
    literal,
    test: literal ? (name: string) => name === source : (name: string) => matches(atoms, name),
  });
}

function tokenize(pattern: string): GlobAtom[] {
  const atoms: GlobAtom[] = [];
  let i = 0;
  while (i < pattern.length) {
    const ch = pattern[i] ?? '';
    const code = pattern.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) throw new GlobError(i, 'control characters are not allowed in a tool glob');
    if (ch === '*') {
      if (pattern[i + 1] === '*')
        throw new GlobError(i, "'**' is not supported; a single '*' already matches any characters");
      atoms.push({ type: 'star' });
      i++;
    } else if (ch === '?') {
      atoms.push({ type: 'any' });
      i++;
    } else if (ch === '[') {
      i = readClass(pattern, i, atoms);
    } else {
      const refused = Object.hasOwn(REFUSED, ch) ? REFUSED[ch] : undefined;
      if (refused !== undefined) throw new GlobError(i, refused);
      atoms.push({ type: 'char', code });
      i++;
    }
  }
  return atoms;
}

/** Reads `[...]` starting at `open`; returns the index after its `]`. */
function readClass(pattern: string, open: number, atoms: GlobAtom[]): number {
  let i = open + 1;
  const negated = pattern[i] === '!' || pattern[i] === '^';
  if (negated) i++;
  const first = i;
  const ranges: number[] = [];
  for (;;) {
    if (i >= pattern.length) {
      // `[]` and `[!]` read as a class holding ']' that never closes; name the likelier mistake.
      const empty = pattern[first] === ']';
      throw new GlobError(open, empty ? 'empty character class' : "unclosed '['");
    }
    const ch = pattern[i] ?? '';
    if (ch === ']' && i > first) break; // a ']' first in the class is literal
    checkClassChar(pattern, i);
    const code = pattern.charCodeAt(i);
    // `a-z` is a range; a '-' first or last in the class is literal.
    if (pattern[i + 1] === '-' && i + 2 < pattern.length && pattern[i + 2] !== ']') {
      checkClassChar(pattern, i + 2);
      const hi = pattern.charCodeAt(i + 2);
      if (hi < code) throw new GlobError(i, 'reversed range in a character class');
      ranges.push(code, hi);
      i += 3;
    } else {
      ranges.push(code, code);
      i++;
    }
  }
  atoms.push({ type: 'class', negated, ranges });
  return i + 1;
}

function checkClassChar(pattern: string, i: number): void {
  const ch = pattern[i] ?? '';
  const code = pattern.charCodeAt(i);
  if (code < 0x20 || code === 0x7f) throw new GlobError(i, 'control characters are not allowed in a tool glob');
  if (ch === '[') throw new GlobError(i, "'[' inside a character class is not supported");
  if (ch === '\\' || ch === '{' || ch === '}' || ch === '(' || ch === ')' || ch === '|') {
    throw new GlobError(i, `'${ch}' is not supported in a tool glob`);
  }
}

/**
 * The atoms of a glob that compiled (compileGlob), for code that reasons about the names a glob
 * matches rather than testing one (./name-classes.ts). Throws GlobError for a pattern that does not compile.
 */
export function globAtoms(pattern: string): readonly GlobAtom[] {
  return tokenize(pattern);
}

/** Whether one atom other than `*` takes the character with this UTF-16 code. */
export function atomTakes(atom: GlobAtom, code: number): boolean {
  return matchesOne(atom, code);
}

function matchesOne(atom: GlobAtom, code: number): boolean {
  switch (atom.type) {
    case 'char':
      return atom.code === code;
    case 'any':
      return true;
    case 'star':
      return false; // handled by the caller
    case 'class': {
      let hit = false;
      for (let k = 0; k + 1 < atom.ranges.length; k += 2) {
        if (code >= atom.ranges[k]! && code <= atom.ranges[k + 1]!) {
          hit = true;
          break;
        }
      }
      return hit !== atom.negated;
    }
  }
}

/**
 * Iterative wildcard matching. On a mismatch, go back to the last `*` and let it swallow one more
 * character. Only the last star needs remembering: whatever an earlier star could absorb, the later
 * one can too, so the walk never revisits a (star, position) pair and stays O(n × m).
 */
function matches(atoms: readonly GlobAtom[], name: string): boolean {
  let p = 0;
  let n = 0;
  let starP = -1;
  let starN = 0;
  while (n < name.length) {
    const atom = atoms[p];
    if (atom !== undefined) {
      if (atom.type === 'star') {
        starP = p++;
        starN = n;
        continue;
      }
      if (matchesOne(atom, name.charCodeAt(n))) {
        p++;
        n++;
        continue;
      }
    }
    if (starP < 0) return false;
    p = starP + 1;
    n = ++starN;
  }
  while (p < atoms.length && atoms[p]?.type === 'star') p++;
  return p === atoms.length;
}
