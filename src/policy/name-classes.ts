// The tool names a glob catalogue entry alone describes, told apart by which selector globs match
// them, with the shortest name of each class (GET /tools, docs/spec.md section 5.5: a glob entry's
// status is that of the names it matches that no other entry describes). Two names of one class are
// selected by exactly the same rules, guards and scopes, so /decide treats them alike; one name per
// class is enough to ask it about all of them.
//
// The search walks every glob at once, character by character, over the characters a tool name may
// hold (request.ts), breadth first, so each class is first met at its shortest name. Each glob is read
// as the set of its atoms it may stand at (a `*` lets it stay), which stays small for the globs
// policies use; the walk gives up past a bound, and the caller then cannot rely on the classes.
import { atomTakes, globAtoms, type GlobAtom } from './glob.js';

export interface NameSpace {
  /** The entry's glob: the names sought match it. */
  readonly glob: string;
  /** Names any of these match are left out (entries that describe them instead or too). */
  readonly excluded: readonly string[];
  /** Names are told apart by which of these match them (the `tools` of rules, guards and scopes). */
  readonly selectors: readonly string[];
}

export interface NameClasses {
  /** The shortest name of each class, in the order the walk met them (shortest first). */
  readonly names: readonly string[];
  /** False when the walk gave up: there may be more classes than `names` shows. */
  readonly complete: boolean;
}

export interface WalkLimits {
  /** Distinct states of the walk (every glob's position at once). */
  readonly states: number;
  readonly classes: number;
}

export const DEFAULT_WALK_LIMITS: WalkLimits = { states: 50_000, classes: 64 };

/** Tool names are at most this long (request.ts). */
const MAX_NAME_LENGTH = 128;

// The characters of a tool name, in the order a witness prefers them (so it reads `lookup_a`, not `lookup_/`).
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_-.:/';
const FIRST = /^[A-Za-z0-9_]$/;

/**
 * Where a name stands against the tool-name pattern (request.ts): no first character yet, at the start
 * of a `/`-separated segment, in a segment that is so far `.` or `..`, in any other segment. A `.` or
 * `..` segment is refused, so a `/` after one, or the end of the name, is not a name.
 */
type Validity = 'start' | 'segment_start' | 'dot' | 'dot_dot' | 'segment' | 'dead';

function validityStep(v: Validity, ch: string): Validity {
  switch (v) {
    case 'start':
      return FIRST.test(ch) ? 'segment' : 'dead';
    case 'segment_start':
      return ch === '/' ? 'segment_start' : ch === '.' ? 'dot' : 'segment';
    case 'dot':
      return ch === '/' ? 'dead' : ch === '.' ? 'dot_dot' : 'segment';
    case 'dot_dot':
      return ch === '/' ? 'dead' : 'segment';
    case 'segment':
      return ch === '/' ? 'segment_start' : 'segment';
    case 'dead':
      return 'dead';
  }
}

const isName = (v: Validity): boolean => v === 'segment' || v === 'segment_start';

const DEAD = 0;
/** A glob past whose position only `*` remains: it matches every continuation. */
const UNIVERSAL = 1;

/** One glob, walked as the set of positions among its atoms it may stand at; states are interned as numbers. */
class GlobWalker {
  private readonly atoms: readonly GlobAtom[];
  private readonly starsToEnd: boolean[];
  private readonly ids = new Map<string, number>();
  private readonly positions: (readonly number[])[] = [[], []];
  private readonly accepting: boolean[] = [false, true];
  private readonly memo = new Map<number, number>();
  readonly start: number;

  constructor(
    atoms: readonly GlobAtom[],
    private readonly classCount: number,
  ) {
    this.atoms = atoms;
    const n = this.atoms.length;
    this.starsToEnd = new Array<boolean>(n + 1).fill(false);
    // Position p < n with only stars from p on: every continuation matches.
    let stars = true;
    for (let p = n - 1; p >= 0; p--) {
      stars = stars && this.atoms[p]!.type === 'star';
      this.starsToEnd[p] = stars;
    }
    this.start = this.intern([0]);
  }

  accepts(state: number): boolean {
    return this.accepting[state]!;
  }

  /** The state after one character of class `cls`, whose representative has this code. */
  step(state: number, cls: number, code: number): number {
    if (state === DEAD || state === UNIVERSAL) return state;
    const key = state * this.classCount + cls;
    const known = this.memo.get(key);
    if (known !== undefined) return known;
    const next: number[] = [];
    for (const p of this.positions[state]!) {
      const atom = this.atoms[p];
      if (atom === undefined) continue;
      if (atom.type === 'star') next.push(p);
      else if (atomTakes(atom, code)) next.push(p + 1);
    }
    const id = this.intern(next);
    this.memo.set(key, id);
    return id;
  }

  /** A set of positions, closed over skipping stars, as a state number. */
  private intern(from: readonly number[]): number {
    const set = new Set<number>();
    const todo = [...from];
    while (todo.length > 0) {
      const p = todo.pop()!;
      if (set.has(p)) continue;
      set.add(p);
      if (this.atoms[p]?.type === 'star') todo.push(p + 1);
    }
    if (set.size === 0) return DEAD;
    for (const p of set) if (this.starsToEnd[p]) return UNIVERSAL;
    const sorted = [...set].sort((a, b) => a - b);
    const key = sorted.join(',');
    let id = this.ids.get(key);
    if (id === undefined) {
      id = this.positions.length;
      this.positions.push(sorted);
      this.accepting.push(sorted.includes(this.atoms.length));
      this.ids.set(key, id);
    }
    return id;
  }
}

/**
 * The characters of a tool name grouped so that every glob involved, and the tool-name pattern, treat
 * the characters of a group alike: the walk steps by group, with the group's first character.
 */
function characterClasses(globs: readonly (readonly GlobAtom[])[]): string[] {
  const groups = new Map<string, string>();
  for (const ch of ALPHABET) {
    const code = ch.charCodeAt(0);
    let signature = `${ch === '.' ? 1 : 0}${ch === '/' ? 1 : 0}${FIRST.test(ch) ? 1 : 0}`;
    for (const atoms of globs)
      for (const atom of atoms) if (atom.type !== 'star') signature += atomTakes(atom, code) ? '1' : '0';
    groups.set(signature, groups.get(signature) ?? ch);
  }
  return [...groups.values()];
}

interface Node {
  readonly entry: number;
  readonly validity: Validity;
  /** Excluded globs still undecided: [index, state] pairs. */
  readonly excluded: readonly (readonly [number, number])[];
  /** Selector globs still undecided: [index, state] pairs. */
  readonly selectors: readonly (readonly [number, number])[];
  /** Selector globs that match every continuation. */
  readonly always: readonly number[];
  readonly parent: number;
  readonly ch: string;
  readonly depth: number;
}

/** One shortest name per class of the names `space.glob` matches, no excluded glob matches, and a request may carry. */
export function nameClasses(space: NameSpace, limits: WalkLimits = DEFAULT_WALK_LIMITS): NameClasses {
  const atoms = [space.glob, ...space.excluded, ...space.selectors].map((g) => globAtoms(g));
  const classes = characterClasses(atoms);
  const walkers = atoms.map((a) => new GlobWalker(a, classes.length));
  const entry = walkers[0]!;
  const excluded = walkers.slice(1, 1 + space.excluded.length);
  const selectors = walkers.slice(1 + space.excluded.length);

  const names: string[] = [];
  const seenClasses = new Set<string>();
  // An excluded glob that matches every name from the start leaves nothing.
  if (excluded.some((w) => w.start === UNIVERSAL)) return { names, complete: true };
  const nodes: Node[] = [
    {
      entry: entry.start,
      validity: 'start',
      excluded: excluded.map((w, i) => [i, w.start] as const).filter(([, s]) => s !== DEAD),
      selectors: selectors.map((w, i) => [i, w.start] as const).filter(([, s]) => s !== DEAD && s !== UNIVERSAL),
      always: selectors.flatMap((w, i) => (w.start === UNIVERSAL ? [i] : [])),
      parent: -1,
      ch: '',
      depth: 0,
    },
  ];
  const seen = new Set<string>([keyOf(nodes[0]!)]);

  for (let at = 0; at < nodes.length; at++) {
    const node = nodes[at]!;
    const isMember =
      node.depth > 0 &&
      isName(node.validity) &&
      entry.accepts(node.entry) &&
      node.excluded.every(([i, s]) => !excluded[i]!.accepts(s));
    if (isMember) {
      const matched = [
        ...node.always,
        ...node.selectors.filter(([i, s]) => selectors[i]!.accepts(s)).map(([i]) => i),
      ].sort((a, b) => a - b);
      const signature = matched.join(',');
      if (!seenClasses.has(signature)) {
        if (seenClasses.size >= limits.classes) return { names, complete: false };
        seenClasses.add(signature);
        names.push(nameOf(nodes, at));
      }
      // Nothing can tell continuations apart any more: they all fall in this class.
      if (node.entry === UNIVERSAL && node.excluded.length === 0 && node.selectors.length === 0) continue;
    }
    if (node.depth >= MAX_NAME_LENGTH) continue;
    for (let c = 0; c < classes.length; c++) {
      const ch = classes[c]!;
      const code = ch.charCodeAt(0);
      const nextEntry = entry.step(node.entry, c, code);
      if (nextEntry === DEAD) continue;
      const validity = validityStep(node.validity, ch);
      if (validity === 'dead') continue;
      const nextExcluded: (readonly [number, number])[] = [];
      let gone = false;
      for (const [i, s] of node.excluded) {
        const t = excluded[i]!.step(s, c, code);
        if (t === UNIVERSAL) {
          gone = true; // this name and every continuation is excluded
          break;
        }
        if (t !== DEAD) nextExcluded.push([i, t]);
      }
      if (gone) continue;
      const nextSelectors: (readonly [number, number])[] = [];
      const always = [...node.always];
      for (const [i, s] of node.selectors) {
        const t = selectors[i]!.step(s, c, code);
        if (t === UNIVERSAL) always.push(i);
        else if (t !== DEAD) nextSelectors.push([i, t]);
      }
      always.sort((a, b) => a - b);
      const next: Node = {
        entry: nextEntry,
        validity,
        excluded: nextExcluded,
        selectors: nextSelectors,
        always,
        parent: at,
        ch,
        depth: node.depth + 1,
      };
      const key = keyOf(next);
      if (seen.has(key)) continue;
      if (seen.size >= limits.states) return { names, complete: false };
      seen.add(key);
      nodes.push(next);
    }
  }
  return { names, complete: true };
}

// Two nodes with one key have the same continuations: only the first (shortest) is walked on.
function keyOf(n: Node): string {
  return `${n.entry}|${n.validity}|${n.excluded.map(([i, s]) => `${i}:${s}`).join(',')}|${n.selectors.map(([i, s]) => `${i}:${s}`).join(',')}|${n.always.join(',')}`;
}

function nameOf(nodes: readonly Node[], at: number): string {
  const chars: string[] = [];
  for (let i = at; i > 0; i = nodes[i]!.parent) chars.push(nodes[i]!.ch);
  return chars.reverse().join('');
}
