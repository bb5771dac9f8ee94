// Condition compiler: AST → type check → a tree of closures, built once at load. No JS source is ever
// generated (no eval, Function or vm): every node is a closure over its pre-compiled children.
// evaluate() and explain() run the same closures; explain passes a sink that collects reasons, so the
// two can never disagree about the truth.
import { compareDecimals, decimalOf } from '../../json/decimal.js';
import type { JsonObject } from '../../json/value.js';
import { looksSecret } from '../path.js';
import { equals, isNull, member, memberOf, negate, nullMemberOf, order, type Truth } from './compare.js';
import { ConditionError } from './errors.js';
import type { CompareOp } from './lex.js';
import { parseCondition, type Expr, type ListExpr, type LiteralExpr, type PathExpr, type Scalar } from './parse.js';
import { ExactNumber, lookup, toSegments } from './values.js';
import { whyBoolean, whyCompare, whyMember, type Named } from './why.js';

export { ConditionError } from './errors.js';
export type { Truth } from './compare.js';

export interface ConditionResult {
  truth: Truth;
  /** e.g. "amount > 100 is true", "undecidable: `amount` is missing"; never an argument value. */
  why: string;
}

export interface CompiledCondition {
  readonly source: string;
  /** The dotted paths the condition reads, in source order, without duplicates. */
  readonly paths: readonly string[];
  /** Never throws: an internal failure is 'undecidable' (fail closed). */
  evaluate(args: JsonObject): Truth;
  explain(args: JsonObject): ConditionResult;
}

/** Reasons collected by explain(); undefined on the evaluate() hot path, which then builds no strings. */
type Sink = string[] | undefined;
type Node = (args: JsonObject, sink: Sink) => Truth;

interface Operand extends Named {
  read(args: JsonObject): unknown;
  readonly literal: LiteralExpr | undefined;
  /** How explanations print it: the path, or the literal in canonical form (a number as written). */
  readonly text: string;
}

const INTERNAL_ERROR = 'undecidable: the arguments could not be evaluated';

/** Throws ConditionError for syntax, type, secret-path and size errors. */
export function compileCondition(source: string): CompiledCondition {
  const paths: string[] = [];
  const root = new Compiler(paths).condition(parseCondition(source));
  return Object.freeze({
    source,
    paths: Object.freeze(paths),
    evaluate(args: JsonObject): Truth {
      try {
        return root(args, undefined);
      } catch {
        return 'undecidable';
      }
    },
    explain(args: JsonObject): ConditionResult {
      const sink: string[] = [];
      try {
        const truth = root(args, sink);
        return { truth, why: sink.join('; ') };
      } catch {
        return { truth: 'undecidable', why: INTERNAL_ERROR };
      }
    },
  });
}

class Compiler {
  private readonly seen = new Set<string>();

  constructor(private readonly paths: string[]) {}

  /** A boolean-valued expression. */
  condition(e: Expr): Node {
    switch (e.kind) {
      case 'and':
        return junction(
          e.operands.map((o) => this.condition(o)),
          false,
        );
      case 'or':
        return junction(
          e.operands.map((o) => this.condition(o)),
          true,
        );
      case 'not': {
        const inner = this.condition(e.operand);
        return (args, sink) => negate(inner(args, sink));
      }
      case 'compare':
        return this.compare(e.op, e.opStart, this.operand(e.left, e.op), this.operand(e.right, e.op));
      case 'in':
        return this.member(e.opStart, this.operand(e.left, 'in'), e.right);
      case 'path':
        return this.barePath(e);
      case 'literal': {
        const value = e.value;
        if (typeof value !== 'boolean') {
          throw typeError(e.start, `${literalKind(value)} is not a condition; compare it with a path, e.g. \`amount > 100\``);
        }
        const why = `the constant ${String(value)}`;
        return (_args, sink) => {
          sink?.push(why);
          return value;
        };
      }
      case 'list':
        throw typeError(e.start, 'a list can only stand on the right of `in`');
    }
  }

  private compare(op: CompareOp, opStart: number, l: Operand, r: Operand): Node {
    if (l.literal !== undefined && r.literal !== undefined) {
      throw typeError(opStart, `'${op}' compares two constants; one side must be a path`);
    }
    const text = `${l.text} ${op} ${r.text}`;
    if (op === '==' || op === '!=') {
      // Against the `null` literal, any present value compares (docs/spec.md: `note == null`).
      const test: (lv: unknown, rv: unknown) => Truth =
        l.literal?.value === null ? (_lv, rv) => isNull(rv) : r.literal?.value === null ? (lv) => isNull(lv) : equals;
      const flip = op === '!=';
      return (args, sink) => {
        const lv = l.read(args);
        const rv = r.read(args);
        const t = flip ? negate(test(lv, rv)) : test(lv, rv);
        if (sink !== undefined) sink.push(t === 'undecidable' ? `undecidable: ${whyCompare(op, l, lv, r, rv)}` : `${text} is ${t}`);
        return t;
      };
    }
    // An ordering against true/false/null can never hold: refuse it at load rather than ask forever.
    for (const side of [l, r]) {
      const lit = side.literal;
      if (lit !== undefined && typeof lit.value !== 'number' && typeof lit.value !== 'string') {
        throw typeError(lit.start, `'${op}' orders numbers or strings, not ${literalKind(lit.value)}`);
      }
    }
    return (args, sink) => {
      const lv = l.read(args);
      const rv = r.read(args);
      const t = order(op, lv, rv);
      if (sink !== undefined) sink.push(t === 'undecidable' ? `undecidable: ${whyCompare(op, l, lv, r, rv)}` : `${text} is ${t}`);
      return t;
    };
  }

  private member(opStart: number, x: Operand, right: Expr): Node {
    if (right.kind === 'list') {
      if (x.literal !== undefined) throw typeError(opStart, '`in` compares two constants; the left side must be a path');
      const items = right.items.map(literalValue);
      const text = `${x.text} in ${renderList(right)}`;
      const listNamed: Named = { path: undefined };
      return (args, sink) => {
        const xv = x.read(args);
        const t = member(xv, items);
        if (sink !== undefined) sink.push(t === 'undecidable' ? `undecidable: ${whyMember(x, xv, listNamed, items)}` : `${text} is ${t}`);
        return t;
      };
    }
    if (right.kind !== 'path') {
      throw typeError(right.start, 'the right side of `in` is a list like ["FR", "DE"] or a path to an array');
    }
    const arr = this.operand(right, 'in');
    const text = `${x.text} in ${arr.text}`;
    // As with `==`, the `null` literal compares with any present element.
    const test = x.literal?.value === null ? (_xv: unknown, av: unknown) => nullMemberOf(av) : memberOf;
    return (args, sink) => {
      const xv = x.read(args);
      const av = arr.read(args);
      const t = test(xv, av);
      if (sink !== undefined) sink.push(t === 'undecidable' ? `undecidable: ${whyMember(x, xv, arr, av)}` : `${text} is ${t}`);
      return t;
    };
  }

  private barePath(e: PathExpr): Node {
    const p = this.operand(e, 'a condition');
    return (args, sink) => {
      const v = p.read(args);
      const t: Truth = typeof v === 'boolean' ? v : 'undecidable';
      if (sink !== undefined) sink.push(t === 'undecidable' ? `undecidable: ${whyBoolean(p, v)}` : `${p.text} is ${t}`);
      return t;
    };
  }

  /** A value operand of `op`: a path or a scalar literal, never a list or a condition. */
  private operand(e: Expr, op: string): Operand {
    switch (e.kind) {
      case 'path':
        return this.path(e);
      case 'literal': {
        const value = literalValue(e);
        return { path: undefined, literal: e, text: renderLiteral(e), read: () => value };
      }
      case 'list':
        throw typeError(e.start, 'a list can only stand on the right of `in`');
      default:
        throw typeError(e.start, `the operands of ${op === 'in' ? '`in`' : `'${op}'`} are paths or literals, not conditions`);
    }
  }

  private path(e: PathExpr): Operand {
    // Containment, not equality, is deliberate (fail closed): `client_secret`, `accessToken` and
    // `credentials` are refused too, at the cost of refusing an innocent `tokenCount`.
    // looksSecret lowercases and drops '-' and '_' first (shared with approval paths in ../path.ts).
    for (const segment of e.segments) {
      if (looksSecret(segment)) {
        throw new ConditionError(
          'secret_path',
          e.start + 1,
          `\`${e.text}\` looks like a secret (password, secret, token, api key, private key or credential) and cannot be read by a condition`,
        );
      }
    }
    if (!this.seen.has(e.text)) {
      this.seen.add(e.text);
      this.paths.push(e.text);
    }
    const segments = toSegments(e.segments);
    return { path: e.text, literal: undefined, text: e.text, read: (args) => lookup(args, segments) };
  }
}

/**
 * Kleene and/or. `dominant` is the value that decides the junction on its own (false for and, true for
 * or); the others are evaluated only until it appears, which gives the same truth as evaluating all.
 * With a sink, the reasons kept are those that decided: the dominant operand's, else the first
 * undecidable one's, else all of them.
 */
function junction(children: readonly Node[], dominant: boolean): Node {
  return (args, sink) => {
    let undecided = false;
    let undecidedWhy: string[] | undefined;
    const allWhy: string[] | undefined = sink === undefined ? undefined : [];
    for (let i = 0; i < children.length; i++) {
      const local: Sink = sink === undefined ? undefined : [];
      const t = children[i]!(args, local); // i < length
      if (t === dominant) {
        if (sink !== undefined && local !== undefined) sink.push(...local);
        return dominant;
      }
      if (t === 'undecidable') {
        if (!undecided) undecidedWhy = local;
        undecided = true;
      } else if (allWhy !== undefined && local !== undefined) {
        allWhy.push(...local);
      }
    }
    if (undecided) {
      if (sink !== undefined && undecidedWhy !== undefined) sink.push(...undecidedWhy);
      return 'undecidable';
    }
    if (sink !== undefined && allWhy !== undefined) sink.push(...allWhy);
    return !dominant;
  };
}

/** A literal as an operand, built once at compile time: a number carries its exact value as written. */
function literalValue(e: LiteralExpr): unknown {
  if (e.number === undefined) return e.value;
  const double = e.value as number; // a number literal's value is its nearest double
  const { exact, text } = e.number;
  // When the text denotes what String(double) does (100, 1e2, 0.1, but not 1234567890123456789), the
  // literal is its double, and compares as one against arguments that are too (see ExactNumber.lexeme).
  const same = decimalOf(String(double));
  const plain = same !== null && compareDecimals(same, exact) === 0;
  return plain ? double : new ExactNumber(double, text, exact);
}

function typeError(start: number, what: string): ConditionError {
  return new ConditionError('type', start + 1, what);
}

function literalKind(v: Scalar): string {
  return v === null ? 'null' : typeof v === 'boolean' ? `\`${String(v)}\`` : `a ${typeof v} literal`;
}

/**
 * Literals print canonically in explanations; strings in single quotes (they are policy text, not
 * data); numbers as written, since String() of the double can differ (1234567890123456789 prints as
 * 1234567890123456800).
 */
function renderLiteral(e: LiteralExpr): string {
  if (e.number !== undefined) return e.number.text;
  const v = e.value;
  if (typeof v !== 'string') return String(v);
  let out = "'";
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    const ch = v[i] ?? '';
    if (ch === "'" || ch === '\\') out += '\\' + ch;
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x09) out += '\\t';
    else if (c === 0x0d) out += '\\r';
    else if (c < 0x20 || c === 0x7f) out += '\\u' + c.toString(16).padStart(4, '0');
    else out += ch;
  }
  return out + "'";
}

function renderList(list: ListExpr): string {
  return `[${list.items.map(renderLiteral).join(', ')}]`;
}
