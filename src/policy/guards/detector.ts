// What a detector is, and a guard's detectors as one test of a text. A guard (src/policy/guards.ts)
// lists its detectors most specific first: a checksum (card, IBAN) beats a shape (email), and a
// heuristic (phone) comes last, so a text holding several reports the strongest evidence.
import { fold, hasNonAscii } from './fold.js';

export interface Detector<K extends string = string> {
  /** The finding's `kind`. */
  readonly kind: K;
  /** How a decision's reason names what was found: "a card number". */
  readonly text: string;
  /**
   * Whether `s` holds one. Reads ASCII digits, letters and punctuation (the walk hands it the text
   * folded as well, see fold.ts), and must run in time linear in `s`: it sees every string of the
   * arguments, whoever wrote them.
   */
  readonly test: (s: string) => boolean;
  /**
   * The fewest and the most digits of one written as a JSON number (no `+`, letters or spaces; '.',
   * '-' and an exponent only); absent when a number can never hold one. The walk skips numbers too
   * short for every detector, and expands an exponent to at most the largest `max` digits.
   */
  readonly numberDigits?: { readonly min: number; readonly max: number };
  /**
   * Where each finding is in `s` as it is, [start, end), sorted, not overlapping (for a redaction).
   * Absent: a finding is the whole text.
   */
  readonly spans?: (s: string) => [number, number][];
}

/**
 * The detectors in order as one test: the kind of the first that fires, in the text as it is or,
 * when it holds anything outside ASCII, folded. Both are scanned: folding can hide a value as well
 * as reveal one ("4111111111111111\u200bx" folds to an identifier), and of the two the more specific
 * kind wins ("4111\u200b 1111 1111 1111" reads as a phone number until the zero-width space is removed).
 */
export function detectIn<K extends string>(detectors: readonly Detector<K>[]): (s: string) => K | null {
  const kinds = detectors.map((d) => d.kind);
  const first = firstOf(
    detectors.map((d) => d.test),
    0,
  );
  return (s) => {
    let i = first(s);
    if (i !== 0 && hasNonAscii(s)) {
      // Nothing is more specific than the first detector: its finding needs no second look.
      const folded = fold(s);
      const j = folded === s ? -1 : first(folded);
      if (j !== -1 && (i === -1 || j < i)) i = j;
    }
    return i === -1 ? null : kinds[i]!; // 0 <= i < kinds.length
  };
}

type Test = (s: string) => boolean;

/**
 * The index of the first test that holds (from `offset`), or -1. Written out four at a time rather
 * than looped over: each test then has a call site of its own, which V8 inlines, where one call in a
 * loop sees every test (measured: 5-10 % of the scan of a text-heavy 100 KB body).
 */
function firstOf(tests: readonly Test[], offset: number): (s: string) => number {
  const [a, b, c, d] = tests;
  if (a === undefined) return () => -1;
  if (b === undefined) return (s) => (a(s) ? offset : -1);
  if (c === undefined) return (s) => (a(s) ? offset : b(s) ? offset + 1 : -1);
  if (d === undefined) return (s) => (a(s) ? offset : b(s) ? offset + 1 : c(s) ? offset + 2 : -1);
  if (tests.length === 4)
    return (s) => (a(s) ? offset : b(s) ? offset + 1 : c(s) ? offset + 2 : d(s) ? offset + 3 : -1);
  const rest = firstOf(tests.slice(4), offset + 4);
  return (s) => (a(s) ? offset : b(s) ? offset + 1 : c(s) ? offset + 2 : d(s) ? offset + 3 : rest(s));
}

/** Where a finding is in a text: `text.slice(start, end)` is what a redaction replaces. */
export interface Span<K extends string = string> {
  readonly type: K;
  readonly start: number;
  readonly end: number;
}

/**
 * What one guard looks for in a text, whatever finds it (hand-written detectors, credential formats,
 * an author's RE2 patterns): the walk (walk.ts) and the redaction (redact.ts) read only this.
 */
export interface TextDetector<K extends string = string> {
  /** The most specific type found in `s`, as it is or folded (see detectIn); null for none. Linear in `s`. */
  readonly first: (s: string) => K | null;
  /**
   * Every finding in `s` as it is, in any order, maybe overlapping (the redaction merges them). May
   * be empty where `first` finds something (only in the folded text): the redaction then replaces
   * the whole text.
   */
  readonly spans: (s: string) => Span<K>[];
  /** The digit bounds of the findings a JSON number can hold (see Detector.numberDigits); empty: none. */
  readonly numberDigits: readonly { readonly min: number; readonly max: number }[];
  /** How a reason names a finding of this type: "a card number". */
  readonly text: (type: K) => string;
  /**
   * A finding made by an object member's key and its string value together (`{"password": "…"}`),
   * where the value alone holds none: the whole value is the finding. Absent: keys say nothing.
   */
  readonly member?: (key: string, value: string) => K | null;
}

/** A guard's detectors as one TextDetector. A detector without `spans` finds the whole text. */
export function fromDetectors<K extends string>(detectors: readonly Detector<K>[]): TextDetector<K> {
  const texts = new Map<string, string>(detectors.map((d) => [d.kind, d.text]));
  return {
    first: detectIn(detectors),
    spans: (s) => {
      const found: Span<K>[] = [];
      for (const d of detectors) {
        if (d.spans) for (const [start, end] of d.spans(s)) found.push({ type: d.kind, start, end });
        else if (d.test(s)) found.push({ type: d.kind, start: 0, end: s.length });
      }
      return found;
    },
    numberDigits: detectors.flatMap((d) => (d.numberDigits ? [d.numberDigits] : [])),
    text: (type) => texts.get(type) ?? type,
  };
}

/**
 * `rank` (the index of the most specific type found, -1 for none) as a `first` that also reads the
 * text folded when it holds anything outside ASCII; the more specific of the two wins (as detectIn).
 */
export function foldAware<K extends string>(types: readonly K[], rank: (s: string) => number): (s: string) => K | null {
  return (s) => {
    let i = rank(s);
    if (i !== 0 && hasNonAscii(s)) {
      const folded = fold(s);
      const j = folded === s ? -1 : rank(folded);
      if (j !== -1 && (i === -1 || j < i)) i = j;
    }
    return i === -1 ? null : types[i]!; // 0 <= i < types.length
  };
}
