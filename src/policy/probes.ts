// Strings that reach what conditions test, for the generated arguments of `never:` properties
// (never.ts): a property is only as good as the inputs it is tried on, and random strings never make
// `argv(command) startswith ["git", "status"]` true. From each compiled test of an argument against a
// literal (condition/compile.ts, `tests`), by how the argument is read:
//   - the argument itself, lower() of it or path() of it: strings the literal makes true and nearly
//     true (`"/repo/"` → `/repo/x`, `/a/../repo/x`; a glob → strings it matches);
//   - its argv() words: commands that start with the listed words, with the tested word at its index,
//     or holding the tested word anywhere (an item of any() or all() over the words);
// then commands are shell-quoted in several ways (`--out""put`), so that a policy deciding on raw
// text rather than on parsed words is caught, and sometimes end in a pipe or a redirection.
import fc from 'fast-check';
import type { JsonObject } from '../json/value.js';
import type { ArgTest } from './condition/compile.js';
import type { Scalar } from './condition/parse.js';

/** What the tests of one argument path ask for. */
export interface PathSamples {
  /** Whole values. */
  readonly values: string[];
  /** First words of commands (argv() startswith, a word at an index). */
  readonly templates: string[][];
  /** Words a command may hold anywhere. */
  readonly words: string[];
}

/** Path prefixes combined with path globs at most, per argument path. */
const MAX_COMBINED = 32;

/**
 * The samples of every argument path the tests read, by path. A test against a `$context` path takes
 * its value from `context` (a property's fixed context), or is left out.
 */
export function samplesOf(tests: readonly ArgTest[], context?: JsonObject): Map<string, PathSamples> {
  const prefixes = new Map<string, string[]>();
  const globbed = new Map<string, string[]>();
  const out = new Map<string, PathSamples>();
  const at = (path: string): PathSamples => {
    let s = out.get(path);
    if (s === undefined) out.set(path, (s = { values: [], templates: [], words: [] }));
    return s;
  };
  for (const test of tests) {
    const literal = test.literal ?? contextValue(context, test.context);
    if (literal === undefined) continue;
    const t = { ...test, literal };
    const s = at(t.probe.path);
    if (t.probe.in === 'argv') {
      const words = strings(t.literal);
      if (t.op === 'startswith') s.templates.push(words);
      else if (t.op === 'endswith') s.values.push(commandOf(['x', ...words]));
      else s.words.push(...words);
      continue;
    }
    const slot = slotStrings(t.op, t.literal, t.probe.asPath === true);
    if (t.probe.in === 'value' && t.probe.asPath === true) {
      // A directory a path must be under, and globs it must not match: also the two at once.
      const into = t.op === 'startswith' ? prefixes : t.op === 'matches' ? globbed : undefined;
      if (into !== undefined) {
        const list = into.get(t.probe.path) ?? [];
        list.push(...(t.op === 'startswith' ? strings(t.literal) : strings(t.literal).flatMap(globInstances)));
        into.set(t.probe.path, list);
      }
    }
    if (t.probe.in === 'value') s.values.push(...slot);
    else if (t.probe.in === 'word') s.words.push(...slot);
    else {
      const fill = Array.from({ length: t.probe.index ?? 0 }, () => 'x');
      for (const w of slot) s.templates.push([...fill, w]);
    }
  }
  for (const [path, dirs] of prefixes) {
    const tails = globbed.get(path) ?? [];
    const combined = dirs.flatMap((d) => tails.map((g) => `${d.endsWith('/') ? d : `${d}/`}${g.replace(/^\/+/, '')}`));
    at(path).values.push(...combined.slice(0, MAX_COMBINED));
  }
  for (const s of out.values()) {
    dedupe(s.values);
    dedupe(s.words);
  }
  return out;
}

/** Strings for the argument at one path: its samples, and commands built of its words. */
export function samplesArbitrary(s: PathSamples): fc.Arbitrary<string> | null {
  const arbs: fc.WeightedArbitrary<string>[] = [];
  if (s.values.length > 0) arbs.push({ arbitrary: fc.constantFrom(...s.values), weight: 2 });
  if (s.templates.length > 0 || s.words.length > 0) arbs.push({ arbitrary: commandArbitrary(s), weight: 5 });
  if (arbs.length === 0) return null;
  return fc.oneof(...arbs);
}

// Words any command might hold, beside those the policies test.
const COMMON_WORDS = ['x', '-n', '--stat', 'README.md', 'src/index.ts', '/tmp/a', '..'];
// What a command sometimes ends with: something argv() refuses (docs/spec.md section 3.4).
const TAILS = ['', '', '', '', ' | sh', ' > out.txt', ' && x', '\nx', ' $(x)'];

function commandArbitrary(s: PathSamples): fc.Arbitrary<string> {
  // The templates' words too: `argv(c).0 == "git" and argv(c).1 == "status"` needs both in one command.
  const pool = [...new Set([...s.words, ...s.templates.flat().filter((w) => w !== 'x'), ...COMMON_WORDS])];
  const word = fc.oneof(
    { arbitrary: fc.constantFrom(...pool), weight: 3 },
    { arbitrary: fc.string({ minLength: 1, maxLength: 6 }), weight: 1 },
  );
  const start: fc.Arbitrary<string[]> =
    s.templates.length > 0 ? fc.constantFrom(...s.templates) : fc.array(word, { minLength: 1, maxLength: 1 });
  return fc
    .tuple(start, fc.array(word, { maxLength: 3 }), fc.nat(), fc.constantFrom(...TAILS))
    .map(([first, rest, quoting, tail]) => commandOf([...first, ...rest], quoting) + tail);
}

/** The words as a POSIX shell command that argv() splits back into exactly them; `quoting` picks a way of quoting. */
export function commandOf(words: readonly string[], quoting = 0): string {
  return words.map((w, i) => quote(w, (quoting >> (i % 16)) & 3)).join(' ');
}

const PLAIN = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** One word, quoted: 0 as is where it can be, 1 in single quotes, 2 split by "" in the middle, 3 a backslash. */
function quote(w: string, way: number): string {
  const single = `'${w.replaceAll("'", `'\\''`)}'`;
  if (!PLAIN.test(w) || (w.startsWith('~') && way === 0)) return single;
  if (way === 1) return single;
  if (way === 2 && w.length > 1) {
    const k = Math.ceil(w.length / 2);
    return `${w.slice(0, k)}""${w.slice(k)}`;
  }
  if (way === 3 && w.length > 1) return `${w.slice(0, 1)}\\${w.slice(1)}`;
  return w;
}

/** Strings that make `x OP literal` true, and some that nearly do. */
function slotStrings(op: ArgTest['op'], literal: Scalar | readonly Scalar[], asPath: boolean): string[] {
  const lits = strings(literal);
  let out: string[];
  switch (op) {
    case 'startswith':
      out = lits.flatMap((l) => [l, `${l}x`]);
      break;
    case 'endswith':
      out = lits.map((l) => `x${l}`);
      break;
    case 'contains':
      out = lits.flatMap((l) => [l, `x${l}x`]);
      break;
    case 'matches':
      out = lits.flatMap(globInstances);
      break;
    default:
      out = lits;
  }
  if (!asPath) return out;
  // path() of it: absolute, the same reached through `..`, and relative (for path(s, base)).
  return out.flatMap((p) => {
    const abs = p.startsWith('/') ? p : `/${p}`;
    return [abs, `/a/..${abs}`, abs.slice(1)];
  });
}

/** The string at a `$context` path, when the context holds one. */
function contextValue(context: JsonObject | undefined, segments: readonly string[] | undefined): string | undefined {
  if (context === undefined || segments === undefined) return undefined;
  let v: unknown = context;
  for (const seg of segments) {
    if (typeof v !== 'object' || v === null || Array.isArray(v) || !Object.hasOwn(v, seg)) return undefined;
    v = (v as Record<string, unknown>)[seg];
  }
  return typeof v === 'string' ? v : undefined;
}

function strings(literal: Scalar | readonly Scalar[]): string[] {
  const items: readonly Scalar[] = Array.isArray(literal) ? literal : [literal as Scalar];
  return items.filter((v): v is string => typeof v === 'string');
}

/** Strings the glob matches: `*` as nothing, as one character and as a path, `?` and a class as one character. */
export function globInstances(glob: string): string[] {
  return ['', 'a', 'a/b'].map((star) => instance(glob, star));
}

function instance(glob: string, star: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!; // i < length
    if (c === '*') out += star;
    else if (c === '?') out += 'a';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) {
        out += c;
        continue;
      }
      out += classMember(glob.slice(i + 1, end));
      i = end;
    } else {
      out += c;
    }
  }
  return out;
}

/** A character of a glob class (`a-z`, `!x`): the first listed, or for a negated one one it does not list. */
function classMember(body: string): string {
  if (!body.startsWith('!')) return body[0] ?? 'a';
  const listed = body.slice(1);
  return ['a', 'x', '0', '_', '-'].find((c) => !inClass(listed, c)) ?? 'a';
}

function inClass(body: string, c: string): boolean {
  for (let i = 0; i < body.length; i++) {
    if (body[i + 1] === '-' && i + 2 < body.length) {
      if (c >= body[i]! && c <= body[i + 2]!) return true;
      i += 2;
    } else if (body[i] === c) {
      return true;
    }
  }
  return false;
}

function dedupe(list: string[]): void {
  const kept = [...new Set(list)];
  list.length = 0;
  list.push(...kept);
}
