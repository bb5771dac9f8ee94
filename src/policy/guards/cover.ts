// Where an RE2 program's matches lie in a text: every character inside some match, in two passes of
// lazily built DFAs, so time linear in the text whatever the pattern and the input. A redaction
// needs places, and asking re2js for match positions runs its NFA (about 100-300 ns a character, and
// one search per match, which can rescan the rest of the text for each); a DFA step is a table read.
// The forward pass (unanchored, as RE2's DFA) notes at each position the program's threads that
// began anywhere before; the backward pass, on the same program read backwards, the threads that can
// still reach MATCH from there; a character is covered where one thread is in both and reads it.
// Assertions (`^`, `$`, `\b`…) are taken from the characters on both sides of a position, as re2js
// does. Built on re2js's compiled program (RE2/J's Inst opcodes: ALT 1, ALT_MATCH 2, CAPTURE 3,
// EMPTY_WIDTH 4, FAIL 5, MATCH 6, NOP 7, RUNE* 8-11), not a public API: anything else makes
// createCover answer null and the caller keeps re2js's own search (a test pins the version).

export interface ProgInst {
  readonly op: number;
  readonly out: number;
  readonly arg: number;
  readonly matchRune: (r: number) => boolean;
}

export interface Prog {
  readonly inst: readonly ProgInst[];
  readonly start: number;
}

/** The covered runs of `s`, `[start, end)` in UTF-16 code units, sorted, apart. */
export type Cover = (s: string) => [number, number][];

const ALT = 1;
const ALT_MATCH = 2;
const CAPTURE = 3;
const EMPTY_WIDTH = 4;
const FAIL = 5;
const MATCH = 6;
const NOP = 7;
const RUNE_FIRST = 8;
const RUNE_LAST = 11;

// re2js's empty-width flags (Utils.EMPTY_*).
const BEGIN_LINE = 1;
const END_LINE = 2;
const BEGIN_TEXT = 4;
const END_TEXT = 8;
const WORD_BOUNDARY = 16;
const NO_WORD_BOUNDARY = 32;

/** States of one kind before the automata are dropped and rebuilt (RE2 bounds its DFA's memory likewise). */
const MAX_STATES = 10_000;
/**
 * The forward pass keeps its kernel every SEGMENT code units: when the automata were dropped during
 * it, the backward pass runs each segment forward again from there (twice the forward work, memory
 * bounded), rather than keeping every position's set.
 */
const SEGMENT = 4096;
/** In the forward pass's record of closed sets, the second code unit of a surrogate pair. */
const INSIDE_PAIR = 0xffff;
/** A marker in a closure for MATCH (pcs are positive). */
const MATCHED = -1;

function isWord(u: number): boolean {
  return (u >= 0x61 && u <= 0x7a) || (u >= 0x41 && u <= 0x5a) || (u >= 0x30 && u <= 0x39) || u === 0x5f;
}

/** re2js's context of the position between code units `before` and `after` (-1: the text's edge). */
function context(before: number, after: number): number {
  let flags = 0;
  if (before < 0) flags |= BEGIN_TEXT | BEGIN_LINE;
  if (before === 10) flags |= BEGIN_LINE;
  if (after < 0) flags |= END_TEXT | END_LINE;
  if (after === 10) flags |= END_LINE;
  flags |= isWord(before) !== isWord(after) ? WORD_BOUNDARY : NO_WORD_BOUNDARY;
  return flags;
}

/**
 * Sets of pcs, each stored once, numbered, with two lazily filled tables (-1: not yet): `close` by
 * context (0-63) and `step` by character (flat arrays for Latin-1, which grow with the sets; a map above).
 */
class Sets {
  constructor(private readonly max: number) {}
  readonly items: Int32Array[] = [];
  private readonly ids = new Map<string, number>();
  /** `close[id * 64 + ctx]`. */
  close = new Int32Array(16 * 64).fill(-1);
  /** `step[id * 256 + r]` for r < 256. */
  step = new Int32Array(16 * 256).fill(-1);
  /** Whether the set holds MATCH. */
  matches = new Uint8Array(16);
  private readonly stepHigh: (Map<number, number> | undefined)[] = [];

  id(pcs: Int32Array): number {
    const key = pcs.join(',');
    const known = this.ids.get(key);
    if (known !== undefined) return known;
    const id = this.items.length;
    if (id >= this.max) return -1;
    if (id >= this.matches.length) {
      const grown = (from: Int32Array<ArrayBuffer>, size: number): Int32Array<ArrayBuffer> => {
        const to = new Int32Array(size).fill(-1);
        to.set(from);
        return to;
      };
      this.close = grown(this.close, id * 2 * 64);
      this.step = grown(this.step, id * 2 * 256);
      const matches = new Uint8Array(id * 2);
      matches.set(this.matches);
      this.matches = matches;
    }
    this.ids.set(key, id);
    this.items.push(pcs);
    this.matches[id] = pcs[0] === MATCHED ? 1 : 0; // sorted: MATCHED (-1) comes first
    return id;
  }

  stepOf(id: number, r: number): number {
    if (r < 256) return this.step[id * 256 + r]!;
    return this.stepHigh[id]?.get(r) ?? -1;
  }

  setStep(id: number, r: number, to: number): void {
    if (r < 256) {
      this.step[id * 256 + r] = to;
      return;
    }
    let m = this.stepHigh[id];
    if (m === undefined) {
      m = new Map();
      this.stepHigh[id] = m;
    }
    m.set(r, to);
  }

  setClose(id: number, ctx: number, to: number): void {
    this.close[id * 64 + ctx] = to;
  }
}

/** The automata's bounds: `states` of each kind (at most 65,534), and `segment` at most `states - 4`; tests make them small. */
export interface CoverBounds {
  readonly states: number;
  readonly segment: number;
}

/** The cover of `prog`'s matches, or null when the program holds an instruction this does not know. */
export function createCover(
  prog: Prog,
  { states: maxStates, segment }: CoverBounds = { states: MAX_STATES, segment: SEGMENT },
): Cover | null {
  if (!(maxStates <= INSIDE_PAIR - 1 && segment >= 1 && segment <= maxStates - 4)) throw new RangeError('cover bounds');
  const inst = prog.inst;
  let need = 0;
  const runes: number[] = [];
  for (let pc = 0; pc < inst.length; pc++) {
    const i = inst[pc]!;
    if (typeof i.op !== 'number' || typeof i.out !== 'number' || typeof i.matchRune !== 'function') return null;
    if (i.op < ALT || i.op > RUNE_LAST) return null;
    if (i.op === EMPTY_WIDTH) need |= i.arg;
    if (i.op >= RUNE_FIRST) runes.push(pc);
  }
  if (typeof prog.start !== 'number' || inst[prog.start] === undefined) return null;

  /** The rune instructions and MATCH reachable from `from` without reading, under context `ctx`. */
  function closure(from: Iterable<number>, ctx: number): number[] {
    const seen = new Set<number>();
    const out: number[] = [];
    const todo = [...from];
    for (let pc = todo.pop(); pc !== undefined; pc = todo.pop()) {
      if (seen.has(pc)) continue;
      seen.add(pc);
      const i = inst[pc]!;
      switch (i.op) {
        case ALT:
        case ALT_MATCH:
          todo.push(i.out, i.arg);
          break;
        case NOP:
        case CAPTURE:
          todo.push(i.out);
          break;
        case EMPTY_WIDTH:
          if ((i.arg & ~ctx) === 0) todo.push(i.out);
          break;
        case MATCH:
          out.push(MATCHED);
          break;
        case FAIL:
          break;
        default:
          out.push(pc);
      }
    }
    return out;
  }

  // Forward: a kernel is where threads stand before the closure (the start always: the search is
  // unanchored); a closed set, the rune instructions waiting for the next character, MATCHED first.
  let kernels = new Sets(maxStates);
  let closed = new Sets(maxStates);
  const sorted = (a: Iterable<number>): Int32Array => Int32Array.from(new Set(a)).sort();

  function forwardClose(k: number, ctx: number): number {
    const to = closed.id(sorted(closure(kernels.items[k]!, ctx)));
    if (to >= 0) kernels.setClose(k, ctx, to);
    return to;
  }
  function forwardStep(c: number, r: number): number {
    const next = [prog.start];
    for (const pc of closed.items[c]!) if (pc !== MATCHED && inst[pc]!.matchRune(r)) next.push(inst[pc]!.out);
    const to = kernels.id(sorted(next));
    if (to >= 0) closed.setStep(c, r, to);
    return to;
  }

  // Backward: `live` is the set of rune instructions that read the character at a position and then
  // can reach MATCH; `good`, the targets (rune instructions' `out`) from which MATCH or a live one is
  // reachable under the context of the position.
  const outs = [...new Set(runes.map((pc) => inst[pc]!.out))].sort((a, b) => a - b);
  const outClosures = new Map<number, number[]>(); // by ctx * inst.length + out
  let lives = new Sets(maxStates);
  let goods = new Sets(maxStates);

  function backwardClose(l: number, ctx: number): number {
    const live = new Set(lives.items[l]!);
    const good: number[] = [];
    for (const y of outs) {
      const key = ctx * inst.length + y;
      let reach = outClosures.get(key);
      if (reach === undefined) {
        reach = closure([y], ctx);
        outClosures.set(key, reach);
      }
      if (reach.some((pc) => pc === MATCHED || live.has(pc))) good.push(y);
    }
    const to = goods.id(Int32Array.from(good));
    if (to >= 0) lives.setClose(l, ctx, to);
    return to;
  }
  function backwardStep(g: number, r: number): number {
    const good = new Set(goods.items[g]!);
    const live = runes.filter((pc) => good.has(inst[pc]!.out) && inst[pc]!.matchRune(r));
    const to = lives.id(Int32Array.from(live));
    if (to >= 0) goods.setStep(g, r, to);
    return to;
  }

  // Whether a closed set and a live set share an instruction: the character between is covered.
  // Each closed set remembers the last live set it met (a run of one pattern repeats the pair), then a map.
  let meets = new Map<number, boolean>();
  let lastLive = new Int32Array(maxStates).fill(-1);
  let lastMeet = new Uint8Array(maxStates);
  function meet(c: number, l: number): boolean {
    const key = c * maxStates + l;
    let hit = meets.get(key);
    if (hit === undefined) {
      const live = new Set(lives.items[l]!);
      hit = closed.items[c]!.some((pc) => live.has(pc));
      meets.set(key, hit);
    }
    lastLive[c] = l;
    lastMeet[c] = hit ? 1 : 0;
    return hit;
  }

  // The automata outlive a text (most texts look alike). When one kind would pass its bound, that
  // direction's automata are dropped and rebuilt from the set at hand, as RE2 does: the passes go on.
  let noneLive = 0;
  function resetForward(): void {
    kernels = new Sets(maxStates);
    closed = new Sets(maxStates);
    resetMeets();
  }
  function resetBackward(): void {
    lives = new Sets(maxStates);
    goods = new Sets(maxStates);
    noneLive = lives.id(new Int32Array(0));
    resetMeets();
  }
  function resetMeets(): void {
    meets = new Map();
    lastLive = new Int32Array(maxStates).fill(-1);
    lastMeet = new Uint8Array(maxStates);
  }
  resetForward();
  resetBackward();

  /**
   * The forward pass over [from, to) from kernel `k0` (pcs, any generation): the closed set at each
   * position that starts a character into `at`, INSIDE_PAIR at a surrogate pair's second unit; the
   * kernel at each multiple of `segment` into `checkpoints` when given. Answers the first position
   * whose entry in `at` is of the automata as they are now (the last time they were dropped), and
   * whether a match ends in the range.
   */
  function forward(
    s: string,
    from: number,
    to: number,
    k0: Int32Array,
    at: Uint16Array,
    checkpoints: Map<number, Int32Array> | null,
  ): { validFrom: number; matched: boolean } {
    const n = s.length;
    let validFrom = from;
    let k = kernels.id(k0);
    if (k < 0) {
      resetForward();
      k = kernels.id(k0);
    }
    // The hot loop reads the flat tables directly (re-read after a miss, which may grow them).
    let kClose = kernels.close;
    let cStep = closed.step;
    let cMatches = closed.matches;
    let matched = 0;
    let nextCheckpoint = checkpoints === null ? Number.POSITIVE_INFINITY : from;
    for (let p = from; ; ) {
      if (p >= nextCheckpoint) {
        checkpoints!.set(p, kernels.items[k]!); // set: not null past the first
        nextCheckpoint = p - (p % segment) + segment;
      }
      const ctx = inner && p > 0 && p < n ? 0 : ctxOf(s, p);
      let c = kClose[k * 64 + ctx]!;
      if (c < 0) {
        c = forwardClose(k, ctx);
        if (c < 0) {
          const pcs = kernels.items[k]!;
          resetForward();
          validFrom = p;
          c = forwardClose(kernels.id(pcs), ctx);
        }
        kClose = kernels.close;
        cStep = closed.step;
        cMatches = closed.matches;
      }
      matched |= cMatches[c]!;
      at[p] = c;
      if (p >= to || p >= n) break;
      let r = s.charCodeAt(p);
      if (r < 256) k = cStep[c * 256 + r]!;
      else {
        r = s.codePointAt(p)!; // p < n
        if (r > 0xffff) at[p + 1] = INSIDE_PAIR;
        k = closed.stepOf(c, r);
      }
      if (k < 0) {
        k = forwardStep(c, r);
        if (k < 0) {
          const pcs = closed.items[c]!;
          resetForward();
          validFrom = p;
          c = closed.id(pcs);
          at[p] = c;
          k = forwardStep(c, r);
        }
        kClose = kernels.close;
        cStep = closed.step;
        cMatches = closed.matches;
      }
      p += r > 0xffff ? 2 : 1;
    }
    return { validFrom, matched: matched !== 0 };
  }

  // The context of position p, in the program's terms.
  const inner = need === 0 || (need & ~(BEGIN_TEXT | END_TEXT)) === 0; // inside the text: 0
  const ctxOf = (s: string, p: number): number =>
    context(p > 0 ? s.charCodeAt(p - 1) : -1, p < s.length ? s.charCodeAt(p) : -1) & need;

  return (s) => {
    const n = s.length;
    const at = new Uint16Array(n + 1); // ids < maxStates < INSIDE_PAIR
    const checkpoints = new Map<number, Int32Array>();
    const first = forward(s, 0, n, Int32Array.of(prog.start), at, checkpoints);
    if (!first.matched) return [];
    // Positions before `validFrom` hold sets of automata since dropped: their segment is run forward
    // again from its checkpoint when the backward pass reaches it.
    let validFrom = first.validFrom;
    const points = [...checkpoints.keys()]; // in the order set: ascending
    let ci = points.length - 1;

    let lClose = lives.close;
    let gStep = goods.step;
    const runs: [number, number][] = [];
    let runEnd = -1; // the end of the run being built backwards, -1 for none
    let runStart = -1;
    let l = noneLive;
    for (let p = n; p > 0; ) {
      if (p - 1 < validFrom) {
        while (points[ci]! > p - 1) ci--; // points[0] is 0
        const cs = points[ci]!;
        // A segment is at most `segment` characters (and a pair): fresh automata hold it whole.
        const room = maxStates - (validFrom - cs) - 2;
        if (kernels.items.length > room || closed.items.length > room) resetForward();
        const again = forward(s, cs, validFrom, checkpoints.get(cs)!, at, null);
        if (again.validFrom !== cs) throw new Error('pattern automata outgrew a segment'); // cannot: room was made
        validFrom = cs;
      }
      // The character ending at p: one code unit, or a surrogate pair.
      const from = at[p - 1] === INSIDE_PAIR ? p - 2 : p - 1;
      const ctx = inner && p < n ? 0 : ctxOf(s, p);
      let g = lClose[l * 64 + ctx]!;
      if (g < 0) {
        g = backwardClose(l, ctx);
        if (g < 0) {
          const pcs = lives.items[l]!;
          resetBackward();
          g = backwardClose(lives.id(pcs), ctx);
        }
        lClose = lives.close;
        gStep = goods.step;
      }
      let r = s.charCodeAt(from);
      if (r < 256) l = gStep[g * 256 + r]!;
      else {
        r = s.codePointAt(from)!; // from < n
        l = goods.stepOf(g, r);
      }
      if (l < 0) {
        l = backwardStep(g, r);
        if (l < 0) {
          const pcs = goods.items[g]!;
          resetBackward();
          l = backwardStep(goods.id(pcs), r);
        }
        lClose = lives.close;
        gStep = goods.step;
      }
      const c = at[from]!;
      if (l !== noneLive && (lastLive[c] === l ? lastMeet[c] === 1 : meet(c, l))) {
        if (runEnd < 0) runEnd = p;
        runStart = from;
      } else if (runEnd >= 0) {
        runs.push([runStart, runEnd]);
        runEnd = -1;
      }
      p = from;
    }
    if (runEnd >= 0) runs.push([runStart, runEnd]);
    return runs.reverse();
  };
}
