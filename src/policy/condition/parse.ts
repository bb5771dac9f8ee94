// Condition parser: tokens → AST with source positions, by recursive descent.
//   or   := and ('or' and)*
//   and  := not ('and' not)*
//   not  := 'not' not | cmp
//   cmp  := prim (op prim | 'in' prim | strop prim)?   (no chaining: `a < b < c` is an error)
//   prim := '(' or ')' | call | path | literal | '[' literal (',' literal)* ']' | '[' ']'
//   call := name '(' or (',' or)* ')' member?       (member: `.0`, `.name` after the parenthesis)
//   strop := 'startswith' | 'endswith' | 'contains' | 'matches'
// Types (what may stand where) are checked by compile.ts, so the messages can say why.
// Recursion is bounded: only `(` and `not` nest, at most MAX_NESTING deep; and/or are n-ary lists.
import type { Decimal } from '../../json/decimal.js';
import { ConditionError, MAX_LIST_ITEMS, MAX_NESTING } from './errors.js';
import { STRING_OPS, tokenize, type CompareOp, type Root, type StringOp, type Token } from './lex.js';

export type Scalar = null | boolean | number | string;

interface Span {
  /** 0-based index of the first character. */
  readonly start: number;
}

export interface PathExpr extends Span {
  readonly kind: 'path';
  /** `args` for a bare path; else the `$` root it starts with (segments come after the root). */
  readonly root: Root;
  readonly segments: readonly string[];
  readonly text: string;
}
/** A built-in applied to its arguments, then optionally a member of what it gives (`argv(c).0`). */
export interface CallExpr extends Span {
  readonly kind: 'call';
  readonly name: string;
  readonly args: readonly Expr[];
  readonly member: readonly string[];
  /** The call as written, for explanations. */
  readonly text: string;
}
export interface StringOpExpr extends Span {
  readonly kind: 'strop';
  readonly op: StringOp;
  readonly opStart: number;
  readonly left: Expr;
  readonly right: Expr;
}
export interface LiteralExpr extends Span {
  readonly kind: 'literal';
  readonly value: Scalar;
  /** Set for a number literal, whose `value` is then only the nearest double. */
  readonly number?: NumberLiteral;
}
/** A number literal as written: compared as written and as a double, and printed back the way the policy wrote it. */
export interface NumberLiteral {
  readonly exact: Decimal;
  readonly text: string;
}
export interface ListExpr extends Span {
  readonly kind: 'list';
  readonly items: readonly LiteralExpr[];
}
export interface CompareExpr extends Span {
  readonly kind: 'compare';
  readonly op: CompareOp;
  /** 0-based index of the operator. */
  readonly opStart: number;
  readonly left: Expr;
  readonly right: Expr;
}
export interface InExpr extends Span {
  readonly kind: 'in';
  readonly opStart: number;
  readonly left: Expr;
  readonly right: Expr;
}
export interface NotExpr extends Span {
  readonly kind: 'not';
  readonly operand: Expr;
}
export interface JunctionExpr extends Span {
  readonly kind: 'and' | 'or';
  /** Two or more operands, in source order. */
  readonly operands: readonly Expr[];
}

export type Expr =
  | PathExpr
  | LiteralExpr
  | ListExpr
  | CompareExpr
  | InExpr
  | StringOpExpr
  | NotExpr
  | JunctionExpr
  | CallExpr;

export function parseCondition(source: string): Expr {
  return new Parser(tokenize(source), source).parseAll();
}

/** A keyword token that is a binary operator after a value: `in` and the string operators. */
function isInfixKeyword(t: Token): boolean {
  return t.type === 'keyword' && (t.value === 'in' || STRING_OPS.has(t.value));
}

class Parser {
  private pos = 0;
  private depth = 0;

  constructor(
    private readonly tokens: readonly Token[],
    private readonly source: string,
  ) {}

  parseAll(): Expr {
    const expr = this.parseOr();
    const t = this.peek();
    if (t.type !== 'end') {
      if (t.type === 'punct' && t.value === ')') fail(t, "unexpected ')' without a matching '('");
      if (t.type === 'op' || isInfixKeyword(t)) {
        fail(t, 'comparisons cannot be chained; join them with `and`');
      }
      fail(
        t,
        `unexpected ${describe(t)}; expected a comparison operator, \`in\`, \`startswith\`, \`endswith\`, \`contains\`, \`matches\`, \`and\`, \`or\` or the end`,
      );
    }
    return expr;
  }

  private parseOr(): Expr {
    return this.parseJunction('or', () => this.parseAnd());
  }

  private parseAnd(): Expr {
    return this.parseJunction('and', () => this.parseNot());
  }

  private parseJunction(kind: 'and' | 'or', next: () => Expr): Expr {
    const first = next();
    if (!this.atKeyword(kind)) return first;
    const operands = [first];
    while (this.atKeyword(kind)) {
      this.pos++;
      operands.push(next());
    }
    return { kind, operands, start: first.start };
  }

  private parseNot(): Expr {
    const t = this.peek();
    if (t.type === 'keyword' && t.value === 'not') {
      this.enter(t);
      this.pos++;
      const operand = this.parseNot();
      this.depth--;
      return { kind: 'not', operand, start: t.start };
    }
    return this.parseComparison();
  }

  private parseComparison(): Expr {
    const left = this.parsePrimary(undefined);
    const t = this.peek();
    let expr: Expr;
    if (t.type === 'op') {
      this.pos++;
      expr = { kind: 'compare', op: t.value, opStart: t.start, left, right: this.parsePrimary(t), start: left.start };
    } else if (t.type === 'keyword' && t.value === 'in') {
      this.pos++;
      expr = { kind: 'in', opStart: t.start, left, right: this.parsePrimary(t), start: left.start };
    } else if (t.type === 'keyword' && STRING_OPS.has(t.value)) {
      this.pos++;
      expr = {
        kind: 'strop',
        op: t.value as StringOp,
        opStart: t.start,
        left,
        right: this.parsePrimary(t),
        start: left.start,
      };
    } else {
      return left;
    }
    const after = this.peek();
    if (after.type === 'op' || isInfixKeyword(after)) {
      fail(after, 'comparisons cannot be chained; join them with `and`');
    }
    return expr;
  }

  /** `after` is the operator this value follows, for the error message. */
  private parsePrimary(after: Token | undefined): Expr {
    const t = this.next();
    switch (t.type) {
      case 'path': {
        const n = this.peek();
        if (n.type === 'punct' && n.value === '(') {
          if (t.root !== 'args' || t.segments.length !== 1)
            fail(n, `\`${t.text}\` cannot be called; only a built-in's name can`);
          return this.parseCall(t);
        }
        if (n.type === 'punct' && n.value === '[') fail(n, `indexing with [ ] is not supported; write \`${t.text}.0\``);
        return { kind: 'path', root: t.root, segments: t.segments, text: t.text, start: t.start };
      }
      case 'member':
        return fail(t, "'.' follows a value only after a call, like `argv(command).0`");
      case 'number':
        return numberLiteral(t);
      case 'string':
        return { kind: 'literal', value: t.value, start: t.start };
      case 'keyword':
        if (t.value === 'true' || t.value === 'false')
          return { kind: 'literal', value: t.value === 'true', start: t.start };
        if (t.value === 'null') return { kind: 'literal', value: null, start: t.start };
        break;
      case 'punct':
        if (t.value === '(') {
          this.enter(t);
          const inner = this.parseOr();
          const close = this.next();
          if (close.type !== 'punct' || close.value !== ')') {
            fail(close, `expected ')' to close the '(' at column ${t.start + 1}, found ${describe(close)}`);
          }
          this.depth--;
          return inner;
        }
        if (t.value === '[') return this.parseList(t);
        break;
      case 'op':
      case 'end':
        break;
    }
    const where = after === undefined ? '' : ` after ${describe(after)}`;
    return fail(t, `expected a value${where}, found ${describe(t)}`);
  }

  /** `name(` has been seen: the arguments, the closing parenthesis, and a member after it. */
  private parseCall(name: Extract<Token, { type: 'path' }>): CallExpr {
    const open = this.next(); // '('
    this.enter(open);
    const args: Expr[] = [];
    if (!this.atPunct(')')) {
      for (;;) {
        args.push(this.parseOr());
        const sep = this.next();
        if (sep.type === 'punct' && sep.value === ')') break;
        if (sep.type !== 'punct' || sep.value !== ',') {
          fail(
            sep,
            `expected ',' or ')' in the call of \`${name.text}\` at column ${name.start + 1}, found ${describe(sep)}`,
          );
        }
      }
    } else {
      this.pos++;
    }
    this.depth--;
    let member: readonly string[] = [];
    let end = this.tokens[this.pos - 1]?.end ?? name.end;
    const m = this.peek();
    if (m.type === 'member') {
      this.pos++;
      member = m.segments;
      end = m.end;
    }
    return { kind: 'call', name: name.text, args, member, text: this.source.slice(name.start, end), start: name.start };
  }

  private parseList(open: Token): ListExpr {
    const items: LiteralExpr[] = [];
    if (this.atPunct(']')) {
      this.pos++;
      return { kind: 'list', items, start: open.start };
    }
    for (;;) {
      const t = this.next();
      if (t.type === 'number') {
        items.push(numberLiteral(t));
      } else if (t.type === 'string') {
        items.push({ kind: 'literal', value: t.value, start: t.start });
      } else if (t.type === 'keyword' && (t.value === 'true' || t.value === 'false' || t.value === 'null')) {
        items.push({ kind: 'literal', value: t.value === 'null' ? null : t.value === 'true', start: t.start });
      } else {
        fail(t, `a list holds only numbers, strings, true, false and null; found ${describe(t)}`);
      }
      if (items.length > MAX_LIST_ITEMS) {
        throw new ConditionError('too_long', t.start + 1, `a list holds at most ${MAX_LIST_ITEMS} items`);
      }
      const sep = this.next();
      if (sep.type === 'punct' && sep.value === ']') return { kind: 'list', items, start: open.start };
      if (sep.type !== 'punct' || sep.value !== ',') {
        fail(sep, `expected ',' or ']' in the list opened at column ${open.start + 1}, found ${describe(sep)}`);
      }
    }
  }

  private enter(t: Token): void {
    this.depth++;
    if (this.depth > MAX_NESTING) {
      throw new ConditionError('too_deep', t.start + 1, `parentheses and \`not\` nest at most ${MAX_NESTING} deep`);
    }
  }

  private peek(): Token {
    // tokenize() always ends with an 'end' token and the parser never moves past it.
    return this.tokens[this.pos] ?? this.tokens[this.tokens.length - 1]!;
  }

  private next(): Token {
    const t = this.peek();
    if (t.type !== 'end') this.pos++;
    return t;
  }

  private atKeyword(value: string): boolean {
    const t = this.peek();
    return t.type === 'keyword' && t.value === value;
  }

  private atPunct(value: string): boolean {
    const t = this.peek();
    return t.type === 'punct' && t.value === value;
  }
}

function numberLiteral(t: Extract<Token, { type: 'number' }>): LiteralExpr {
  return { kind: 'literal', value: t.value, number: { exact: t.exact, text: t.text }, start: t.start };
}

const SHOWN_MAX = 32;

function fail(t: Token, what: string): never {
  throw new ConditionError('syntax', t.start + 1, what);
}

/**
 * How an error message names a token: operator-written text, cut to a few dozen characters (a long
 * run pasted into a condition, a secret say, is not printed back at load), and never the content of
 * a string.
 */
function describe(t: Token): string {
  switch (t.type) {
    case 'path':
    case 'member':
    case 'number':
      return `\`${t.text.length > SHOWN_MAX ? `${t.text.slice(0, SHOWN_MAX)}…` : t.text}\``;
    case 'keyword':
      return `\`${t.value}\``;
    case 'string':
      return 'a string';
    case 'op':
    case 'punct':
      return `'${t.value}'`;
    case 'end':
      return 'the end of the condition';
  }
}
