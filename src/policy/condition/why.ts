// Why an operator came out undecidable, for explain(). Called only after compare.ts has decided the
// truth, so it can never change a result. It names paths and JSON types, never argument values.
import { asExact, isScalarKind, kindOf, operandAt, type Kind } from './values.js';

/** An operand as the explanation names it: its path (or call), or undefined for a literal. */
export interface Named {
  readonly path: string | undefined;
  /** A built-in's value: when it has none, its argument was missing or not what it takes. */
  readonly call?: string;
}

/** Why a built-in gave nothing, by its name (never the argument's value). */
const NO_VALUE: Readonly<Record<string, string>> = {
  argv: 'the command is missing or not a string, or a shell would do more than split it into words: an operator, a redirection, an expansion, a glob or a second line',
  'argv.N':
    'the command has no word there, is missing or not a string, or a shell would do more than split it into words',
  path: 'the path is missing or not a string, relative, climbs above /, or holds NUL',
  'path.base':
    'the path is missing or not a string, relative with a base that is missing or not absolute, climbs above /, or holds NUL',
};

export function kindPhrase(k: Kind): string {
  switch (k) {
    case 'null':
      return 'null';
    case 'array':
      return 'an array';
    case 'object':
      return 'an object';
    case 'missing':
      return 'a missing value';
    case 'other':
      return 'a value that is not JSON';
    case 'boolean':
    case 'number':
    case 'string':
      return `a ${k}`;
  }
}

/** `==`, `!=` and the orderings. */
export function whyCompare(op: string, l: Named, lv: unknown, r: Named, rv: unknown): string {
  const absent = whyAbsent(l, lv) ?? whyAbsent(r, rv);
  if (absent !== undefined) return absent;
  const lk = kindOf(lv);
  const rk = kindOf(rv);
  if (lk !== rk) return crossType(l, lk, r, rk);
  if (lk === 'number') {
    // Two numbers are undecidable only when they are the same double (compare.ts): one of them has
    // no exact value, or the exact values differ and the two readings disagree.
    const incomparable = whyIncomparable(l, lv) ?? whyIncomparable(r, rv);
    if (incomparable !== undefined) return incomparable;
    const [a, b] = l.path === undefined ? [r, l] : [l, r];
    return `\`${a.path ?? ''}\` is ${SAME_DOUBLE} ${b.path === undefined ? 'the literal' : `\`${b.path}\``}${DIFFERENT_AS_WRITTEN}`;
  }
  const subject = l.path !== undefined ? `\`${l.path}\`` : `\`${r.path ?? ''}\``;
  const wants =
    op === '==' || op === '!=' ? 'compares numbers, strings, booleans or null' : 'orders only numbers or strings';
  return `${subject} is ${kindPhrase(lk)}; ${op} ${wants}`;
}

/** `x in list` (list literal: `container` has no path) or `x in path`. */
export function whyMember(x: Named, xv: unknown, container: Named, cv: unknown): string {
  const absent = whyAbsent(x, xv) ?? whyAbsent(container, cv);
  if (absent !== undefined) return absent;
  const xk = kindOf(xv);
  if (!isScalarKind(xk))
    return `\`${x.path ?? ''}\` is ${kindPhrase(xk)}; \`in\` tests a number, string, boolean or null`;
  if (!Array.isArray(cv)) return `\`${container.path ?? ''}\` is ${kindPhrase(kindOf(cv))}, not an array`;
  const holder = container.path !== undefined ? `\`${container.path}\`` : 'the list';
  // The first element member() could not compare with x, found as member() finds it.
  const xn = xk === 'number' ? asExact(xv) : undefined;
  let ek: Kind = 'null';
  for (let i = 0; i < cv.length; i++) {
    // Read as member() reads it, so a number comes with its lexeme.
    const e = operandAt(cv, i, cv[i]);
    const k = kindOf(e);
    if (xn !== undefined && k === 'number') {
      const en = asExact(e);
      if (en.double !== xn.double) continue; // compared: a different double is a different number
      const incomparable = whyIncomparable(x, xv);
      if (incomparable !== undefined) return incomparable;
      if (en.exact() === null) return `${holder} holds ${INCOMPARABLE}`;
      if (x.path === undefined) return `${holder} holds ${SAME_DOUBLE} the literal${DIFFERENT_AS_WRITTEN}`;
      return `\`${x.path}\` is ${SAME_DOUBLE} a number in ${holder}${DIFFERENT_AS_WRITTEN}`;
    }
    if (k !== xk && k !== 'null') {
      ek = k;
      break;
    }
  }
  if (x.path === undefined) return `${holder} holds ${kindPhrase(ek)}, compared with ${kindPhrase(xk)}`;
  return `\`${x.path}\` is ${kindPhrase(xk)}, and ${holder} holds ${kindPhrase(ek)}`;
}

/** `startswith`, `endswith`, `contains` (r: the right operand) and `matches` (r: undefined, a glob). */
export function whyStringOp(op: string, l: Named, lv: unknown, r: Named | undefined, rv: unknown): string {
  const absent = whyAbsent(l, lv) ?? (r === undefined ? undefined : whyAbsent(r, rv));
  if (absent !== undefined) return absent;
  const lk = kindOf(lv);
  const subject = l.path !== undefined ? `\`${l.path}\`` : `\`${r?.path ?? ''}\``;
  if (op === 'matches') return `${subject} is ${kindPhrase(lk)}; \`matches\` reads a string`;
  const rk = kindOf(rv);
  if (op === 'contains') {
    if (lk === 'array')
      return `${subject} is an array, and the value looked for is ${kindPhrase(rk)}, or an element could not be compared with it`;
    return `${subject} is ${kindPhrase(lk)}, compared with ${kindPhrase(rk)}; \`contains\` reads a string in a string, or an element of an array`;
  }
  if (lk === 'array' && rk === 'array') return `${subject}: an item could not be compared`;
  return `${subject} is ${kindPhrase(lk)}, compared with ${kindPhrase(rk)}; \`${op}\` reads two strings or two arrays`;
}

/** A bare path read as a boolean. */
export function whyBoolean(p: Named, v: unknown): string {
  return whyAbsent(p, v) ?? `\`${p.path ?? ''}\` is ${kindPhrase(kindOf(v))}, not a boolean`;
}

const INCOMPARABLE = 'a number with an exponent too long to compare';
// Equal as doubles (as any tool reading JSON numbers as doubles sees them), unequal as written: the
// explanation says so without quoting either number.
const SAME_DOUBLE = 'the same double as';
const DIFFERENT_AS_WRITTEN = ' but a different number as written; the two readings disagree';

/** A number operand without an exact value (a literal always has one: the lexer refuses the rest). */
function whyIncomparable(n: Named, v: unknown): string | undefined {
  if (kindOf(v) !== 'number' || asExact(v).exact() !== null) return undefined;
  return `\`${n.path ?? ''}\` is ${INCOMPARABLE}`;
}

/** Why an operand has no value to test (missing, or not JSON); undefined when it has one. */
export function whyAbsent(n: Named, v: unknown): string | undefined {
  if (n.path === undefined) return undefined;
  const k = kindOf(v);
  if (k === 'missing' && n.call !== undefined)
    return `\`${n.path}\` has no value (${NO_VALUE[n.call] ?? 'its argument is missing, or not what it takes'})`;
  if (k === 'missing') return `\`${n.path}\` is missing`;
  if (k === 'other') return `\`${n.path}\` holds a value that is not JSON`;
  return undefined;
}

function crossType(l: Named, lk: Kind, r: Named, rk: Kind): string {
  // Lead with a path: "`amount` is a string, compared with a number" reads the same for `100 < amount`.
  const [a, ak, b, bk] = l.path === undefined ? [r, rk, l, lk] : [l, lk, r, rk];
  const other = b.path === undefined ? kindPhrase(bk) : `\`${b.path}\`, ${kindPhrase(bk)}`;
  return `\`${a.path ?? ''}\` is ${kindPhrase(ak)}, compared with ${other}`;
}
