// The three-valued operators (docs/spec.md section 3). A MISSING operand, or two values of different JSON
// types, gives 'undecidable' rather than a guess: the caller then fails closed (asks for approval, or
// applies a restricting rule). Numbers compare both as doubles (what a JavaScript tool acts on) and by
// their exact value as written (what the request says): where the two readings disagree, which can
// only happen between numbers with the same double, the comparison is undecidable. Strings compare by
// UTF-16 code units.
import { compareDecimals } from '../../json/decimal.js';
import type { CompareOp } from './lex.js';
import { asExact, doubleOf, isScalarKind, kindOf, operandAt } from './values.js';

export type Truth = true | false | 'undecidable';

/** `==` between two operands, neither of which is the `null` literal: same scalar type, or undecidable. */
export function equals(l: unknown, r: unknown): Truth {
  const lk = kindOf(l);
  if (!isScalarKind(lk) || lk !== kindOf(r)) return 'undecidable';
  if (lk !== 'number') return l === r;
  const c = compareNumbers(l, r);
  return c === undefined ? 'undecidable' : c === 0;
}

/** `== null` (the literal): defined for any present value, true iff it is null. */
export function isNull(v: unknown): Truth {
  const k = kindOf(v);
  if (k === 'missing' || k === 'other') return 'undecidable';
  return k === 'null';
}

export function negate(t: Truth): Truth {
  return t === 'undecidable' ? t : !t;
}

/** `< <= > >=`: both numbers or both strings, else undecidable. */
export function order(op: CompareOp, l: unknown, r: unknown): Truth {
  const lk = kindOf(l);
  if ((lk !== 'number' && lk !== 'string') || lk !== kindOf(r)) return 'undecidable';
  let c: -1 | 0 | 1 | undefined;
  if (lk === 'number') {
    c = compareNumbers(l, r);
    if (c === undefined) return 'undecidable';
  } else {
    // Both strings, checked above.
    const a = l as string;
    const b = r as string;
    c = a < b ? -1 : a > b ? 1 : 0;
  }
  switch (op) {
    case '<':
      return c < 0;
    case '<=':
      return c <= 0;
    case '>':
      return c > 0;
    case '>=':
      return c >= 0;
    case '==':
    case '!=':
      return 'undecidable'; // not an ordering: compile.ts never routes these here
  }
}

/**
 * `x in list`: x must be a present scalar. True if an element equals it; else undecidable if an
 * element could not be compared with it; else false. An element can be compared when it has x's type
 * (for numbers: a different double, or the same double and the same value as written) or is null (as
 * the `null` literal can be compared with anything present). `list` is a compiled literal list or an argument array, whose numbers are read
 * with their lexemes.
 */
export function member(x: unknown, list: readonly unknown[]): Truth {
  const xk = kindOf(x);
  if (!isScalarKind(xk)) return 'undecidable';
  const xDouble = xk === 'number' ? doubleOf(x) : Number.NaN;
  let incomparable = false;
  for (let i = 0; i < list.length; i++) {
    const raw = list[i];
    // A number whose double differs from x's differs exactly too: no operand needed.
    if (xk === 'number' && typeof raw === 'number' && Number.isFinite(raw) && raw !== xDouble) continue;
    const e = operandAt(list, i, raw);
    const ek = kindOf(e);
    if (ek === 'number' && xk === 'number') {
      const c = compareNumbers(x, e);
      if (c === 0) return true;
      if (c === undefined) incomparable = true;
    } else if (ek === xk) {
      if (e === x) return true;
    } else if (ek !== 'null') {
      incomparable = true;
    }
  }
  return incomparable ? 'undecidable' : false;
}

/** `null in path` (the literal): like `null == element` for each element, which any present value allows. */
export function nullMemberOf(arr: unknown): Truth {
  if (!Array.isArray(arr)) return 'undecidable';
  let incomparable = false;
  for (let i = 0; i < arr.length; i++) {
    const t = isNull(arr[i]);
    if (t === true) return true;
    if (t === 'undecidable') incomparable = true;
  }
  return incomparable ? 'undecidable' : false;
}

/**
 * -1, 0 or 1 between two operands of kind 'number' (bare doubles or ExactNumbers), read as doubles and
 * as written; undefined where the two readings disagree.
 */
function compareNumbers(l: unknown, r: unknown): -1 | 0 | 1 | undefined {
  // Rounding to a double is monotonic: different doubles order their exact values the same way.
  const a = doubleOf(l);
  const b = doubleOf(r);
  if (a !== b) return a < b ? -1 : 1;
  // Two bare doubles are their own texts: equal. (The common case, with no allocation.)
  if (typeof l === 'number' && typeof r === 'number') return 0;
  // Same double: equal as a tool reading doubles sees them. Unless the exact values agree, the two
  // readings disagree, and that is undecidable (fail closed both ways).
  const dx = asExact(l).exact();
  const dy = asExact(r).exact();
  return dx !== null && dy !== null && compareDecimals(dx, dy) === 0 ? 0 : undefined;
}

/** `x in path`: like member, and undecidable unless the path holds an array. */
export function memberOf(x: unknown, arr: unknown): Truth {
  if (!Array.isArray(arr)) return 'undecidable';
  return member(x, arr);
}
