// The three-valued operators (SPEC section 3). A MISSING operand, or two values of different JSON
// types, gives 'undecidable' rather than a guess: the caller then fails closed (asks for approval, or
// applies a restricting rule). Numbers compare as JS doubles, strings by UTF-16 code units.
import type { CompareOp } from './lex.js';
import { isScalarKind, kindOf } from './values.js';

export type Truth = true | false | 'undecidable';

/** `==` between two operands, neither of which is the `null` literal: same scalar type, or undecidable. */
export function equals(l: unknown, r: unknown): Truth {
  const lk = kindOf(l);
  if (!isScalarKind(lk) || lk !== kindOf(r)) return 'undecidable';
  return l === r;
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
  // Same primitive type on both sides, checked above.
  const a = l as number | string;
  const b = r as number | string;
  switch (op) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
    case '==':
    case '!=':
      return 'undecidable'; // not an ordering: compile.ts never routes these here
  }
}

/**
 * `x in list`: x must be a present scalar. True if an element equals it; else undecidable if an
 * element could not be compared with it; else false. An element can be compared when it has x's type
 * or is null (as the `null` literal can be compared with anything present).
 */
export function member(x: unknown, list: readonly unknown[]): Truth {
  const xk = kindOf(x);
  if (!isScalarKind(xk)) return 'undecidable';
  let incomparable = false;
  for (let i = 0; i < list.length; i++) {
    const e = list[i];
    const ek = kindOf(e);
    if (ek === xk) {
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

/** `x in path`: like member, and undecidable unless the path holds an array. */
export function memberOf(x: unknown, arr: unknown): Truth {
  if (!Array.isArray(arr)) return 'undecidable';
  return member(x, arr);
}
