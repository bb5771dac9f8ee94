// The one walk over a tool's arguments that a guard's detectors share: every string value, every
// object key, and every number, both as it was written and as its integer value (4111111111111111.0
// and 4.111111111111111e15 are the same card number as 4111111111111111). Each text goes through
// the detectors in order (detector.ts); the first finding in document order ends the walk. A
// finding names the JSON pointer and the kind, never the matched text.
import { decimalOf, integerDigits } from '../../json/decimal.js';
import { escapePointerSegment } from '../../json/pointer.js';
import { numberLexemes, type JsonValue } from '../../json/value.js';
import { fromDetectors, type Detector, type TextDetector } from './detector.js';

export interface Finding<K extends string = string> {
  /**
   * RFC 6901 JSON pointer of the value, e.g. "/note" or "/items/0/text"; for a finding in a key, the
   * pointer of the object holding that key (the key itself is what must not be echoed).
   */
  path: string;
  kind: K;
  /** Present (true) when the finding is in an object key rather than a value. */
  inKey?: true;
}

/**
 * The scan of a guard's detectors, set up once: the first finding in document order, depth first,
 * arrays by index, objects in Object.keys order (which puts integer-like keys first, as every JS
 * object does), an object's keys before its values. A number is scanned as the text it was written
 * with (its recorded lexeme, else its shortest form) and as its integer digits (see inNumber). Each
 * string and number is scanned on its own: digits split across array elements (["4111", "1111",
 * "1111", "1111"]) are not joined. Iterative, so 256-deep arguments cannot overflow the stack.
 */
export function createScan<K extends string>(
  detectors: readonly Detector<K>[] | TextDetector<K>,
): (value: JsonValue, rootLexeme?: string) => Finding<K> | null {
  const td = 'first' in detectors ? detectors : fromDetectors(detectors as readonly Detector<K>[]);
  const detect = td.first;
  const inNumber = createNumberTest(td);
  const inNumbers = td.numberDigits;
  const member = td.member;
  // A number's text shorter than the fewest digits any detector finds in one, and without an
  // exponent, holds nothing to find: a body of 250,000 small numbers must not cost a scan each.
  const numberMinText = inNumbers.length === 0 ? Number.POSITIVE_INFINITY : Math.min(...inNumbers.map((n) => n.min));

  /** A number becomes the text it was written with; anything else is scanned as it is. null for what holds nothing to find. */
  function entry(
    v: unknown,
    lexemes: ReadonlyMap<string, string> | undefined,
    parent: string,
    key: string,
  ): Entry | null {
    if (typeof v === 'number') {
      if (inNumbers.length === 0) return null;
      const text = lexemes?.get(key) ?? String(v);
      if (text.length < numberMinText && !hasExponent(text)) return null;
      return { value: text, parent, key, isNumber: true, double: v };
    }
    if (typeof v !== 'string' && (typeof v !== 'object' || v === null)) return null;
    return { value: v, parent, key, isNumber: false, double: Number.NaN };
  }

  // `rootLexeme`: the text a number at the root was written with (its container is the caller's).
  return (root, rootLexeme) => {
    // Paths are built only for containers and findings; scalars carry their parent's path and key.
    // A number is pushed as its written text, with `isNumber` set.
    const first =
      typeof root === 'number'
        ? entry(root, rootLexeme === undefined ? undefined : new Map([['', rootLexeme]]), '', '')
        : { value: root, parent: '', key: null, isNumber: false, double: Number.NaN };
    if (first === null) return null;
    if (first.key === '') first.key = null; // the root's pointer is ""
    const stack: Entry[] = [first];
    for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
      const { value } = top;
      if (typeof value === 'string') {
        const kind = top.isNumber
          ? inNumber(value, top.double)
          : (detect(value) ?? (member && top.member ? member(top.key!, value) : null));
        if (kind !== null) return { path: pointer(top), kind };
      } else if (Array.isArray(value)) {
        const path = pointer(top);
        const lexemes = numberLexemes(value);
        for (let i = value.length - 1; i >= 0; i--) {
          const e = entry(value[i], lexemes, path, String(i));
          if (e !== null) stack.push(e);
        }
      } else if (typeof value === 'object' && value !== null) {
        const path = pointer(top);
        const keys = Object.keys(value); // own enumerable keys only, `__proto__` data included
        for (const key of keys) {
          const kind = detect(key);
          if (kind !== null) return { path, kind, inKey: true };
        }
        const lexemes = numberLexemes(value);
        for (let k = keys.length - 1; k >= 0; k--) {
          const key = keys[k]!; // k < length
          const e = entry((value as Record<string, unknown>)[key], lexemes, path, key);
          if (e === null) continue;
          if (member) e.member = true;
          stack.push(e);
        }
      }
    }
    return null;
  };
}

/**
 * The test of a number's written text (see inNumber below) for a detector's numbers: the type found,
 * or null (also for a detector that finds nothing in numbers).
 */
export function createNumberTest<K extends string>(td: TextDetector<K>): (written: string, double: number) => K | null {
  const detect = td.first;
  // Only integers of at most this many digits are expanded, so the expansion stays short whatever the exponent.
  const maxDigits = Math.max(0, ...td.numberDigits.map((n) => n.max));
  /**
   * A number as written, then as its exact integer digits, then as the integer its double is:
   * `4111111111111111.0`, `4.111111111111111e15` and `4111111111111111E0` are the card 4111111111111111
   * (an argument built in code, without a lexeme, is that plain number), and so is
   * `4111111111111110.9` to a tool that reads doubles.
   */
  return function inNumber(written: string, double: number): K | null {
    const kind = detect(written);
    if (kind !== null) return kind;
    let digits: string | null = null;
    if (mayBeRewrittenInteger(written)) {
      const value = decimalOf(written);
      digits = value === null ? null : integerDigits(value, maxDigits);
      const found = digits === null ? null : detect(digits);
      if (found !== null) return found;
    }
    // A number written as its double's own text (most are) was scanned as that text already.
    if (!Number.isInteger(double) || written === String(double) || Math.abs(double) >= 10 ** maxDigits) return null;
    const ofDouble = BigInt(Math.abs(double)).toString();
    return ofDouble === digits ? null : detect(ofDouble);
  };
}

interface Entry {
  value: unknown;
  parent: string;
  key: string | null;
  /** `value` is the written text of a number. */
  isNumber: boolean;
  /** The number's double (NaN for anything else). */
  double: number;
  /** The value of an object member (for TextDetector.member). */
  member?: true;
}

function hasExponent(text: string): boolean {
  return text.indexOf('e') !== -1 || text.indexOf('E') !== -1;
}

/** `key` is null for the arguments object itself, whose pointer is "". */
function pointer(e: { parent: string; key: string | null }): string {
  return e.key === null ? '' : `${e.parent}/${escapePointerSegment(e.key)}`;
}

/**
 * Can the written number be an integer whose digits differ from the text? Only with an exponent or a
 * fraction of zeros ("…1.0", "…1.000"). A cheap filter: most numbers (1200, 12.5) skip decimalOf.
 */
function mayBeRewrittenInteger(written: string): boolean {
  if (hasExponent(written)) return true;
  const dot = written.indexOf('.');
  if (dot === -1) return false; // the written digits already are the integer's digits
  for (let k = dot + 1; k < written.length; k++) if (written.charCodeAt(k) !== 0x30) return false;
  return true;
}
