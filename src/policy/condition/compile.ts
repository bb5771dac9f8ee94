// Condition compiler: AST → type check → a tree of closures, built once at load. No JS source is ever
// generated (no eval, Function or vm): every node is a closure over its pre-compiled children.
// evaluate() and explain() run the same closures; explain passes a sink that collects reasons, so the
// two can never disagree about the truth.
import { compareDecimals, decimalOf } from '../../json/decimal.js';
import type { JsonObject } from '../../json/value.js';
import { compileGlob, GlobError, type Glob } from '../glob.js';
import type { Identity } from '../identity.js';
import { looksSecret } from '../path.js';
import { equals, isNull, member, memberOf, negate, nullMemberOf, order, type Truth } from './compare.js';
import { ConditionError } from './errors.js';
import type { CompareOp, StringOp } from './lex.js';
import {
  parseCondition,
  type CallExpr,
  type Expr,
  type ListExpr,
  type LiteralExpr,
  type PathExpr,
  type Scalar,
} from './parse.js';
import { normalizePath, shellWords } from './shell.js';
import { ExactNumber, kindOf, lookup, operandAt, toSegments, type Segment } from './values.js';
import { ANY, ARRAY, BOOLEAN, NULL, NUMBER, OBJECT, STRING, typeName, typeOfValue } from './types.js';
import { kindPhrase, whyAbsent, whyBoolean, whyCompare, whyMember, whyStringOp, type Named } from './why.js';

export { ConditionError } from './errors.js';
export type { Truth } from './compare.js';

export interface ConditionResult {
  truth: Truth;
  /** e.g. "amount > 100 is true", "undecidable: `amount` is missing"; never an argument value. */
  why: string;
}

/**
 * What a condition reads: the tool's arguments (a bare path), and the roots `$caller` (the verified
 * identity), `$context` (the facts the host runtime sent), `$run` (the run view), `$env` and
 * `$approval` (the cited approval, read by the engine).
 */
export interface ConditionInput {
  readonly args: JsonObject;
  readonly caller: Identity;
  readonly context: JsonObject | undefined;
  readonly run:
    | {
        readonly id?: string;
        readonly steps?: readonly { readonly tool: string; readonly decision?: string }[];
        readonly approvals?: readonly { readonly id: string; readonly kind?: string; readonly status?: string }[];
      }
    | undefined;
  readonly env: string | null;
  /** The cited approval (`$approval`), when the engine found it stands for this very call. */
  readonly approval?: {
    readonly kind: string;
    readonly status: string;
    readonly decided_by: string;
    readonly decided_at: string;
  };
}

/**
 * One read of the arguments (a bare path), with what its use can decide with: the load checks it
 * against each selected tool's schema (../schema-check.ts).
 */
export interface ArgRead {
  readonly text: string;
  readonly segments: readonly string[];
  /** 1-based column of the path in the condition. */
  readonly column: number;
  /** The JSON types (./types.ts) the use decides with; ANY when it takes any. */
  readonly wants: number;
  /** How it is used, for messages: "compared with a string". */
  readonly use: string;
}

/**
 * Where a tested string comes from, for the generator of `never:` properties (../probes.ts): the
 * argument at `path` itself, its argv() words, its word at `index`, or any of its words (an item of
 * `any`/`all` over argv()); `asPath` when the string was passed through path() first.
 */
export interface Probe {
  readonly path: string;
  readonly in: 'value' | 'argv' | 'argvAt' | 'word';
  readonly index?: number;
  readonly asPath?: boolean;
}

/** One test of an argument against a literal: what a generated value must look like to reach it. */
export interface ArgTest {
  readonly probe: Probe;
  readonly op: 'eq' | 'order' | 'in' | StringOp;
  /** The literal: a scalar, or a list (`in`, and argv() `startswith`/`endswith`); for `context`, undefined. */
  readonly literal?: Scalar | readonly Scalar[];
  /** Set when the other side is a `$context` path (its segments): the value is the request's. */
  readonly context?: readonly string[];
}

export interface CompiledCondition {
  readonly source: string;
  /** The paths the condition reads, as written (`amount`, `$caller.team`), in source order, without duplicates. */
  readonly paths: readonly string[];
  /** Every read of the arguments and how it is used, in source order. */
  readonly reads: readonly ArgRead[];
  /** Every test of an argument (or its words) against a literal, in source order. */
  readonly tests: readonly ArgTest[];
  /** The argument paths read through argv() or path(), by built-in (`gatehouse check` tries inputs of each kind on them). */
  readonly parsed: { readonly argv: readonly string[]; readonly path: readonly string[] };
  /** Never throws: an internal failure is 'undecidable' (fail closed). */
  evaluate(input: ConditionInput): Truth;
  explain(input: ConditionInput): ConditionResult;
  /**
   * How many of the tests inside it (comparisons, `in`, string operators, has(), a bare boolean) are
   * true on this input, each read even where the result is settled without it: whether generated
   * input reaches what the condition tests (`never:` properties). 0 on an internal failure.
   */
  testsHeld(input: ConditionInput): number;
}

/** Reasons collected by explain(); undefined on the evaluate() hot path, which then builds no strings. */
type Sink = (string[] & { [FULL]?: true }) | undefined;
/**
 * Marks a sink that wants every test decided and its reason, not only those that decided the result
 * (testsHeld()): junctions and quantifiers then read every operand and item. Same truth either way.
 */
const FULL: unique symbol = Symbol('every test');

/** A sink for an operand's reasons: none on the hot path, and full when its parent's is. */
function sub(sink: Sink): Sink {
  if (sink === undefined) return undefined;
  const out: Sink = [];
  if (sink[FULL] === true) out[FULL] = true;
  return out;
}
type Node = (input: ConditionInput, sink: Sink) => Truth;

interface Operand extends Named {
  read(input: ConditionInput): unknown;
  readonly literal: LiteralExpr | undefined;
  /** How explanations print it: the path or call, or the literal in canonical form (a number as written). */
  readonly text: string;
  /** 0-based index where it starts in the source. */
  readonly start: number;
  /** The JSON types it can hold when present (./types.ts): known for literals, built-ins and roots. */
  readonly type: number;
  /** Set for a path into the arguments. */
  readonly arg?: { readonly segments: readonly string[] };
  /** For a list: the JSON types its items hold (./types.ts), when known. */
  readonly items?: number;
  /** Set when the value is an argument, or derived from one by lower(), path() or argv(). */
  readonly probe?: Probe;
  /** Set for a `$context` path: its segments. */
  readonly context?: readonly string[];
}

/** An item of a list being quantified (`w` in `any(argv(command), w, …)`), set while its body runs. */
interface Binding {
  list: readonly unknown[];
  index: number;
}

/** The built-ins, the only things a condition can call (docs/spec.md section 3), by their arity. */
const BUILTINS: Readonly<Record<string, { readonly min: number; readonly max: number }>> = {
  lower: { min: 1, max: 1 },
  len: { min: 1, max: 1 },
  path: { min: 1, max: 2 },
  argv: { min: 1, max: 1 },
  count: { min: 2, max: 3 },
  has: { min: 1, max: 1 },
  any: { min: 3, max: 3 },
  all: { min: 3, max: 3 },
};
/** What each built-in gives (./types.ts). */
const RESULT: Readonly<Record<string, number>> = {
  lower: STRING,
  len: NUMBER,
  path: STRING,
  argv: ARRAY,
  count: NUMBER,
};
/** The built-ins that are conditions themselves: true, false or undecidable, never a value to compare. */
const CONDITION_BUILTINS: ReadonlySet<string> = new Set(['has', 'any', 'all']);
const DECISIONS: ReadonlySet<string> = new Set(['allow', 'deny', 'abort', 'require_approval']);

const INTERNAL_ERROR = 'undecidable: the arguments could not be evaluated';

/** Throws ConditionError for syntax, type, secret-path and size errors. */
export function compileCondition(source: string): CompiledCondition {
  const compiler = new Compiler();
  const root = compiler.condition(parseCondition(source));
  return Object.freeze({
    source,
    paths: Object.freeze(compiler.paths),
    reads: Object.freeze(compiler.reads),
    tests: Object.freeze(compiler.tests),
    parsed: Object.freeze({
      argv: Object.freeze([...compiler.parsed.argv]),
      path: Object.freeze([...compiler.parsed.path]),
    }),
    evaluate(input: ConditionInput): Truth {
      try {
        return root(input, undefined);
      } catch {
        return 'undecidable';
      }
    },
    explain(input: ConditionInput): ConditionResult {
      const sink: string[] = [];
      try {
        const truth = root(input, sink);
        return { truth, why: sink.join('; ') };
      } catch {
        return { truth: 'undecidable', why: INTERNAL_ERROR };
      }
    },
    testsHeld(input: ConditionInput): number {
      const sink: Sink = [];
      sink[FULL] = true;
      try {
        root(input, sink);
      } catch {
        return 0;
      }
      return sink.filter((why) => why.endsWith(' is true')).length;
    },
  });
}

class Compiler {
  readonly paths: string[] = [];
  readonly reads: ArgRead[] = [];
  readonly tests: ArgTest[] = [];
  readonly parsed = { argv: new Set<string>(), path: new Set<string>() };
  private readonly seen = new Set<string>();
  /** The names `any` and `all` bind, while their bodies compile: each reads its item from a slot. */
  private readonly bound = new Map<
    string,
    { readonly slot: Binding; readonly items: number; readonly probe: Probe | undefined }
  >();

  /** Records `o op literal` for the generator of `never:` properties when `o` derives from an argument. */
  private test(o: Operand, op: ArgTest['op'], literal: Scalar | readonly Scalar[] | undefined): void {
    if (o.probe !== undefined && literal !== undefined) this.tests.push({ probe: o.probe, op, literal });
  }

  /** `o op $context.PATH`, recorded likewise. */
  private contextTest(o: Operand, op: ArgTest['op'], other: Operand): void {
    if (o.probe !== undefined && other.context !== undefined)
      this.tests.push({ probe: o.probe, op, context: other.context });
  }

  /**
   * `o` is used where only `types` can decide: a load error when it can never hold one (a built-in,
   * a root or a literal of another type); for a path into the arguments, recorded for the schema check.
   */
  private want(o: Operand, types: number, use: string): void {
    check(o, types, use);
    if (o.arg !== undefined)
      this.reads.push({ text: o.text, segments: o.arg.segments, column: o.start + 1, wants: types, use });
  }

  /** Both sides of `op` must hold a type of `domain`, and a type the other side can hold too. */
  private pair(l: Operand, r: Operand, domain: number, op: string): void {
    check(l, domain, op);
    check(r, domain, op);
    this.want(l, domain & r.type, `${op} with ${describe(r)}`);
    this.want(r, domain & l.type, `${op} with ${describe(l)}`);
  }

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
        return (input, sink) => negate(inner(input, sink));
      }
      case 'compare':
        return this.compare(e.op, e.opStart, this.operand(e.left, e.op), this.operand(e.right, e.op));
      case 'in':
        return this.member(e.opStart, this.operand(e.left, 'in'), e.right);
      case 'strop':
        return this.stringOp(e.op, e.opStart, this.operand(e.left, e.op), e.right);
      case 'call':
        if (CONDITION_BUILTINS.has(e.name)) return this.conditionCall(e);
        return this.bare(this.operand(e, 'a condition'));
      case 'path':
        return this.bare(this.operand(e, 'a condition'));
      case 'literal': {
        const value = e.value;
        if (typeof value !== 'boolean') {
          throw typeError(
            e.start,
            `${literalKind(value)} is not a condition; compare it with a path, e.g. \`amount > 100\``,
          );
        }
        const why = `the constant ${String(value)}`;
        return (_input, sink) => {
          sink?.push(why);
          return value;
        };
      }
      case 'list':
        throw typeError(e.start, 'a list can only stand on the right of `in`, `startswith`, `endswith` or `matches`');
    }
  }

  private compare(op: CompareOp, opStart: number, l: Operand, r: Operand): Node {
    if (l.literal !== undefined && r.literal !== undefined) {
      throw typeError(opStart, `'${op}' compares two constants; one side must be a path`);
    }
    const text = `${l.text} ${op} ${r.text}`;
    const kind = op === '==' || op === '!=' ? 'eq' : 'order';
    this.test(l, kind, r.literal?.value);
    this.test(r, kind, l.literal?.value);
    this.contextTest(l, kind, r);
    this.contextTest(r, kind, l);
    if (op === '==' || op === '!=') {
      // Two sides that can never have one type never compare equal: a mistake, refused at load.
      if (l.literal?.value === null || r.literal?.value === null) {
        this.want(l, ANY, `\`${op}\``);
        this.want(r, ANY, `\`${op}\``);
      } else {
        // Lists and objects never compare (compare.ts): only scalars can be equal.
        this.pair(l, r, STRING | NUMBER | BOOLEAN | NULL, `\`${op}\``);
      }
      // Against the `null` literal, any present value compares (docs/spec.md: `note == null`).
      const test: (lv: unknown, rv: unknown) => Truth =
        l.literal?.value === null ? (_lv, rv) => isNull(rv) : r.literal?.value === null ? (lv) => isNull(lv) : equals;
      const flip = op === '!=';
      return (input, sink) => {
        const lv = l.read(input);
        const rv = r.read(input);
        const t = flip ? negate(test(lv, rv)) : test(lv, rv);
        if (sink !== undefined)
          sink.push(t === 'undecidable' ? `undecidable: ${whyCompare(op, l, lv, r, rv)}` : `${text} is ${t}`);
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
    this.pair(l, r, NUMBER | STRING, `\`${op}\``);
    return (input, sink) => {
      const lv = l.read(input);
      const rv = r.read(input);
      const t = order(op, lv, rv);
      if (sink !== undefined)
        sink.push(t === 'undecidable' ? `undecidable: ${whyCompare(op, l, lv, r, rv)}` : `${text} is ${t}`);
      return t;
    };
  }

  private member(opStart: number, x: Operand, right: Expr): Node {
    if (right.kind === 'list') {
      if (x.literal !== undefined)
        throw typeError(opStart, '`in` compares two constants; the left side must be a path');
      const items = right.items.map(literalValue);
      this.test(
        x,
        'in',
        right.items.map((i) => i.value),
      );
      // `null` in the list matches any present value, as `== null` does.
      const itemTypes = right.items.some((i) => i.value === null)
        ? ANY
        : right.items.reduce((t, i) => t | typeOfValue(i.value), 0);
      this.want(x, itemTypes === 0 ? ANY : itemTypes, '`in` with this list');
      const text = `${x.text} in ${renderList(right)}`;
      const listNamed: Named = { path: undefined };
      return (input, sink) => {
        const xv = x.read(input);
        const t = member(xv, items);
        if (sink !== undefined)
          sink.push(t === 'undecidable' ? `undecidable: ${whyMember(x, xv, listNamed, items)}` : `${text} is ${t}`);
        return t;
      };
    }
    if (right.kind !== 'path' && right.kind !== 'call') {
      throw typeError(
        right.start,
        'the right side of `in` is a list like ["FR", "DE"], a path to an array, or a call that gives one',
      );
    }
    const arr = this.operand(right, 'in');
    this.want(arr, ARRAY, 'the right side of `in`');
    this.want(x, ANY, '`in`');
    const text = `${x.text} in ${arr.text}`;
    // As with `==`, the `null` literal compares with any present element.
    const test = x.literal?.value === null ? (_xv: unknown, av: unknown) => nullMemberOf(av) : memberOf;
    return (input, sink) => {
      const xv = x.read(input);
      const av = arr.read(input);
      const t = test(xv, av);
      if (sink !== undefined)
        sink.push(t === 'undecidable' ? `undecidable: ${whyMember(x, xv, arr, av)}` : `${text} is ${t}`);
      return t;
    };
  }

  /**
   * `a startswith b`, `a endswith b` (strings, or lists item by item), `a contains b` (a substring, or
   * an element of a list), `a matches "GLOB"` (the whole string against a glob compiled here). Any
   * other pair of types is undecidable.
   */
  private stringOp(op: StringOp, opStart: number, l: Operand, rightExpr: Expr): Node {
    if (op === 'matches') {
      const globs = globsOf(rightExpr);
      if (l.literal !== undefined)
        throw typeError(opStart, '`matches` compares two constants; the left side must be a path or a call');
      this.want(l, STRING, '`matches`');
      this.test(
        l,
        'matches',
        rightExpr.kind === 'list' ? rightExpr.items.map((i) => i.value) : (rightExpr as LiteralExpr).value,
      );
      const text = `${l.text} matches ${rightExpr.kind === 'list' ? renderList(rightExpr) : renderLiteral(rightExpr as LiteralExpr)}`;
      return (input, sink) => {
        const v = l.read(input);
        const t: Truth = typeof v === 'string' ? globs.some((g) => g.test(v)) : 'undecidable';
        if (sink !== undefined)
          sink.push(
            t === 'undecidable' ? `undecidable: ${whyStringOp(op, l, v, undefined, undefined)}` : `${text} is ${t}`,
          );
        return t;
      };
    }
    const r = this.operand(rightExpr, op);
    if (l.literal !== undefined && r.literal !== undefined) {
      throw typeError(opStart, `\`${op}\` compares two constants; one side must be a path or a call`);
    }
    if (op === 'contains') {
      // A string holds a string; a list holds anything.
      check(l, STRING | ARRAY, '`contains`');
      this.want(l, (STRING | ARRAY) & ((r.type & STRING) !== 0 ? ANY : ARRAY), `\`contains\` with ${describe(r)}`);
      this.want(r, (l.type & ARRAY) !== 0 ? ANY : STRING, `\`contains\` in ${describe(l)}`);
    } else {
      this.pair(l, r, STRING | ARRAY, `\`${op}\``);
    }
    this.test(l, op, rightExpr.kind === 'list' ? rightExpr.items.map((i) => i.value) : r.literal?.value);
    this.contextTest(l, op, r);
    const test = op === 'startswith' ? startsWith : op === 'endswith' ? endsWith : contains;
    const text = `${l.text} ${op} ${r.text}`;
    return (input, sink) => {
      const lv = l.read(input);
      const rv = r.read(input);
      const t = test(lv, rv);
      if (sink !== undefined)
        sink.push(t === 'undecidable' ? `undecidable: ${whyStringOp(op, l, lv, r, rv)}` : `${text} is ${t}`);
      return t;
    };
  }

  /** A path or call standing alone: true or false when it holds a boolean, else undecidable. */
  private bare(p: Operand): Node {
    this.want(p, BOOLEAN, 'a condition');
    return (input, sink) => {
      const v = p.read(input);
      const t: Truth = typeof v === 'boolean' ? v : 'undecidable';
      if (sink !== undefined) sink.push(t === 'undecidable' ? `undecidable: ${whyBoolean(p, v)}` : `${p.text} is ${t}`);
      return t;
    };
  }

  /** A value operand of `op`: a path, a call or a scalar literal; a literal list where `op` takes one. */
  private operand(e: Expr, op: string): Operand {
    switch (e.kind) {
      case 'path':
        return this.path(e);
      case 'call':
        return this.call(e);
      case 'literal': {
        const value = literalValue(e);
        return {
          path: undefined,
          literal: e,
          text: renderLiteral(e),
          start: e.start,
          type: typeOfValue(e.value),
          read: () => value,
        };
      }
      case 'list': {
        if (op !== 'startswith' && op !== 'endswith') {
          throw typeError(e.start, 'a list can only stand on the right of `in`, `startswith`, `endswith` or `matches`');
        }
        const items = e.items.map(literalValue);
        return {
          path: undefined,
          literal: undefined,
          text: renderList(e),
          start: e.start,
          type: ARRAY,
          read: () => items,
        };
      }
      default:
        throw typeError(
          e.start,
          `the operands of ${/^[a-z]/.test(op) ? `\`${op}\`` : `'${op}'`} are paths, calls or literals, not conditions`,
        );
    }
  }

  /** A built-in (BUILTINS) over its compiled arguments, then the member after it, if any. */
  private call(e: CallExpr): Operand {
    this.spec(e);
    if (CONDITION_BUILTINS.has(e.name)) {
      throw typeError(
        e.start,
        `\`${e.name}()\` is a condition, not a value: write it alone, or joined with \`and\`, \`or\`, \`not\``,
      );
    }
    let value: (input: ConditionInput) => unknown;
    let probe: Probe | undefined;
    let call: string = e.name;
    if (e.name === 'count') {
      value = this.count(e);
    } else if (e.name === 'path' && e.args.length === 2) {
      const p = this.operand(e.args[0]!, 'path()');
      value = this.resolve(p, this.operand(e.args[1]!, 'path()'));
      probe = p.probe === undefined ? undefined : { ...p.probe, asPath: true };
      call = 'path.base';
    } else {
      const x = this.operand(e.args[0]!, `${e.name}()`);
      value = this.unary(e.name, x);
      probe = derivedProbe(e.name, x.probe);
    }
    let type = RESULT[e.name] ?? ANY;
    if (e.member.length > 0) {
      // Only argv() gives a list to take a word of; a word is a string.
      if (e.name !== 'argv' || e.member.length !== 1 || !/^(0|[1-9][0-9]*)$/.test(e.member[0]!)) {
        throw typeError(
          e.start,
          `\`${e.text}\`: only argv() has members, one word by its index, like \`argv(command).0\``,
        );
      }
      type = STRING;
      call = 'argv.N';
      probe = probe === undefined ? undefined : { path: probe.path, in: 'argvAt', index: Number(e.member[0]) };
    }
    const segments = toSegments(e.member);
    const read = segments.length === 0 ? value : (input: ConditionInput) => memberAt(value(input), segments);
    return {
      path: e.text,
      call,
      literal: undefined,
      text: e.text,
      start: e.start,
      type,
      read,
      ...(e.name === 'argv' && e.member.length === 0 ? { items: STRING } : {}),
      ...(probe !== undefined ? { probe } : {}),
    };
  }

  /** The built-in's arity checked; a load error for a name that is none. */
  private spec(e: CallExpr): { readonly min: number; readonly max: number } {
    const spec = Object.hasOwn(BUILTINS, e.name) ? BUILTINS[e.name] : undefined;
    if (spec === undefined) {
      throw typeError(
        e.start,
        `\`${e.name}\` cannot be called; the built-ins are ${Object.keys(BUILTINS)
          .map((n) => `${n}()`)
          .join(', ')}`,
      );
    }
    if (e.args.length < spec.min || e.args.length > spec.max) {
      const n = spec.min === spec.max ? `${spec.min}` : `${spec.min} or ${spec.max}`;
      throw typeError(e.start, `\`${e.name}\` takes ${n} argument${spec.max === 1 ? '' : 's'}`);
    }
    return spec;
  }

  /** `has(x)`, `any(list, w, cond)`, `all(list, w, cond)`: built-ins that are conditions. */
  private conditionCall(e: CallExpr): Node {
    this.spec(e);
    if (e.member.length > 0) throw typeError(e.start, `\`${e.name}()\` is a condition and has no members`);
    if (e.name === 'has') return this.has(e);
    return this.quantifier(e, e.name === 'any' ? 'any' : 'all');
  }

  /**
   * `has(x)`: true when the path or call has a value (null included), false when it is missing or the
   * built-in gives nothing. Never undecidable for JSON input: it is how a condition asks "could this be
   * decided?" (`not has(argv(command))`: the command is not plain words).
   */
  private has(e: CallExpr): Node {
    const arg = e.args[0]!;
    if (arg.kind !== 'path' && arg.kind !== 'call')
      throw typeError(arg.start, '`has` tests a path or a call, like `has(argv(command))`');
    const x = this.operand(arg, 'has()');
    this.want(x, ANY, 'has()');
    const text = e.text;
    return (input, sink) => {
      const k = kindOf(x.read(input));
      // `other` (NaN, a function) only comes from a bug upstream: never a yes or a no.
      const t: Truth = k === 'other' ? 'undecidable' : k !== 'missing';
      if (sink !== undefined)
        sink.push(
          t === 'undecidable' ? `undecidable: \`${x.text}\` holds a value that is not JSON` : `${text} is ${t}`,
        );
      return t;
    };
  }

  /**
   * `any(list, w, cond)` (CEL's `exists`, Rego's `some`) and `all(list, w, cond)` (CEL's and Rego's
   * `every`): `cond` read once per item, the item named `w` inside it. Kleene, like `or` and `and`:
   * `any` is true when an item's cond is true, else undecidable when one is undecidable (or the list
   * is not a list), else false; `all` likewise with false. So an item that cannot be decided never
   * lets `all` hold or `any` fail. An empty list: `any` false, `all` true.
   */
  private quantifier(e: CallExpr, kind: 'any' | 'all'): Node {
    const [listExpr, nameExpr, bodyExpr] = e.args as [Expr, Expr, Expr]; // arity checked: 3
    if (listExpr.kind !== 'path' && listExpr.kind !== 'call') {
      throw typeError(
        listExpr.start,
        `\`${kind}\` goes over a list: a path to an array or a call that gives one, like \`${kind}(argv(command), w, …)\``,
      );
    }
    const list = this.operand(listExpr, `${kind}()`);
    this.want(list, ARRAY, `\`${kind}\``);
    if (nameExpr.kind !== 'path' || nameExpr.root !== 'args' || nameExpr.segments.length !== 1) {
      throw typeError(
        nameExpr.start,
        `the second argument of \`${kind}\` is a name for each item, like \`w\` in \`${kind}(argv(command), w, …)\``,
      );
    }
    const name = nameExpr.segments[0]!;
    if (this.bound.has(name))
      throw typeError(
        nameExpr.start,
        `\`${name}\` already names the items of an enclosing any() or all(); choose another name`,
      );
    this.checkSecret(name, name, nameExpr.start);
    const slot: Binding = { list: [], index: 0 };
    const probe: Probe | undefined = list.probe?.in === 'argv' ? { path: list.probe.path, in: 'word' } : undefined;
    this.bound.set(name, { slot, items: list.items ?? ANY, probe });
    let body: Node;
    try {
      body = this.condition(bodyExpr);
    } finally {
      this.bound.delete(name);
    }
    const dominant = kind === 'any';
    const text = `${kind}(${list.text}, ${name}, …)`;
    const listNamed: Named = { path: list.path, ...(list.call !== undefined ? { call: list.call } : {}) };
    return (input, sink) => {
      const lv = list.read(input);
      if (!Array.isArray(lv)) {
        if (sink !== undefined) sink.push(`undecidable: ${whyList(listNamed, lv)}`);
        return 'undecidable';
      }
      let undecidedAt = -1;
      let undecidedWhy: string[] | undefined;
      let sawDominant = false;
      try {
        for (let i = 0; i < lv.length; i++) {
          slot.list = lv;
          slot.index = i;
          const local = sub(sink);
          const t = body(input, local);
          if (sink?.[FULL] === true) {
            sink.push(...(local ?? []));
            if (t === dominant) sawDominant = true;
            else if (t === 'undecidable' && undecidedAt < 0) undecidedAt = i;
            continue;
          }
          if (t === dominant) {
            if (sink !== undefined) sink.push(`${text} is ${String(dominant)}: item ${i}: ${(local ?? []).join('; ')}`);
            return dominant;
          }
          if (t === 'undecidable' && undecidedAt < 0) {
            undecidedAt = i;
            undecidedWhy = local;
          }
        }
      } finally {
        // An item is never left readable once the quantifier is done.
        slot.list = [];
        slot.index = 0;
      }
      if (sawDominant) return dominant;
      if (sink?.[FULL] === true) return undecidedAt >= 0 ? 'undecidable' : !dominant;
      if (undecidedAt >= 0) {
        if (sink !== undefined)
          sink.push(
            `undecidable: ${text}: item ${undecidedAt}: ${(undecidedWhy ?? []).map(dropUndecidable).join('; ')}`,
          );
        return 'undecidable';
      }
      if (sink !== undefined)
        sink.push(
          `${text} is ${String(!dominant)} (${lv.length === 0 ? 'no items' : `${dominant ? 'no item holds' : 'every item holds'}`})`,
        );
      return !dominant;
    };
  }

  private unary(name: string, x: Operand): (input: ConditionInput) => unknown {
    this.want(x, name === 'len' ? STRING | ARRAY : STRING, `${name}()`);
    if (x.arg !== undefined && (name === 'argv' || name === 'path')) this.parsed[name].add(x.text);
    switch (name) {
      case 'lower':
        return (input) => {
          const v = x.read(input);
          return typeof v === 'string' ? v.toLowerCase() : undefined;
        };
      case 'len':
        return (input) => {
          const v = x.read(input);
          if (Array.isArray(v)) return v.length;
          return typeof v === 'string' ? codePoints(v) : undefined;
        };
      case 'path':
        return (input) => {
          const v = x.read(input);
          return typeof v === 'string' ? normalizePath(v) : undefined;
        };
      default: // argv, the only other one-argument built-in that gives a value
        return (input) => {
          const v = x.read(input);
          return typeof v === 'string' ? shellWords(v) : undefined;
        };
    }
  }

  /** `path(s, base)`: `s` resolved against the directory `base` when relative, then as path(). */
  private resolve(s: Operand, base: Operand): (input: ConditionInput) => unknown {
    this.want(s, STRING, 'path()');
    this.want(base, STRING, 'the base of path()');
    if (s.arg !== undefined) this.parsed.path.add(s.text);
    return (input) => {
      const v = s.read(input);
      if (typeof v !== 'string') return undefined;
      if (v.startsWith('/')) return normalizePath(v);
      const b = base.read(input);
      if (typeof b !== 'string' || !b.startsWith('/')) return undefined;
      return normalizePath(`${b}/${v}`);
    };
  }

  /** `count(steps, "GLOB")`, `count(steps, "GLOB", "DECISION")`: steps whose tool matches (and whose decision is DECISION). */
  private count(e: CallExpr): (input: ConditionInput) => unknown {
    const steps = this.operand(e.args[0]!, 'count()');
    this.want(steps, ARRAY, 'count()');
    const globArg = e.args[1]!;
    if (globArg.kind !== 'literal' || typeof globArg.value !== 'string') {
      throw typeError(
        globArg.start,
        '`count` takes the tools to count as a glob written as a string, like `count($run.steps, "refund")`',
      );
    }
    const glob = globOf(globArg, 'count');
    const decisionArg = e.args[2];
    let decision: string | undefined;
    if (decisionArg !== undefined) {
      if (
        decisionArg.kind !== 'literal' ||
        typeof decisionArg.value !== 'string' ||
        !DECISIONS.has(decisionArg.value)
      ) {
        throw typeError(
          decisionArg.start,
          '`count` takes a decision as its third argument: "allow", "deny", "abort" or "require_approval"',
        );
      }
      decision = decisionArg.value;
    }
    return (input) => {
      const list = steps.read(input);
      if (!Array.isArray(list)) return undefined;
      let n = 0;
      for (const step of list) {
        if (typeof step !== 'object' || step === null) return undefined;
        const { tool, decision: d } = step as { tool?: unknown; decision?: unknown };
        if (typeof tool !== 'string') return undefined;
        if (glob.test(tool) && (decision === undefined || d === decision)) n++;
      }
      return n;
    };
  }

  private path(e: PathExpr): Operand {
    for (const segment of e.segments) this.checkSecret(segment, e.text, e.start);
    const binding = e.root === 'args' ? this.bound.get(e.segments[0]!) : undefined;
    if (binding !== undefined) return boundOperand(e, binding.slot, binding.items, binding.probe);
    if (!this.seen.has(e.text)) {
      this.seen.add(e.text);
      this.paths.push(e.text);
    }
    return {
      path: e.text,
      literal: undefined,
      text: e.text,
      start: e.start,
      type: rootType(e),
      read: rootReader(e),
      ...(e.root === 'args' ? { arg: { segments: e.segments }, probe: { path: e.text, in: 'value' as const } } : {}),
      ...(e.root === 'caller' && e.segments.length === 1 && e.segments[0] === 'roles' ? { items: STRING } : {}),
      ...(e.root === 'context' ? { context: e.segments } : {}),
    };
  }

  // Containment, not equality, is deliberate (fail closed): `client_secret`, `accessToken` and
  // `credentials` are refused too, at the cost of refusing an innocent `tokenCount`.
  // looksSecret lowercases and drops '-' and '_' first (shared with approval paths in ../path.ts).
  private checkSecret(segment: string, text: string, start: number): void {
    if (looksSecret(segment)) {
      throw new ConditionError(
        'secret_path',
        start + 1,
        `\`${text}\` looks like a secret (password, secret, token, api key, private key or credential) and cannot be read by a condition`,
      );
    }
  }
}

/** The item a quantifier is on (`w`), or a member of it (`i.sku`), as an operand. */
function boundOperand(e: PathExpr, slot: Binding, items: number, probe: Probe | undefined): Operand {
  const rest = toSegments(e.segments.slice(1));
  // Read from the list as a path would, so a number comes with its lexeme.
  const read =
    rest.length === 0
      ? () => (slot.index < slot.list.length ? operandAt(slot.list, slot.index, slot.list[slot.index]) : undefined)
      : () => (slot.index < slot.list.length ? memberAt(slot.list[slot.index], rest) : undefined);
  return {
    path: e.text,
    literal: undefined,
    text: e.text,
    start: e.start,
    type: rest.length === 0 ? items : ANY,
    read,
    ...(rest.length === 0 && probe !== undefined ? { probe } : {}),
  };
}

/** What lower(), path() or argv() of an operand derives from the argument it reads, if any. */
function derivedProbe(name: string, p: Probe | undefined): Probe | undefined {
  if (p === undefined) return undefined;
  switch (name) {
    case 'lower':
      return p;
    case 'path':
      return { ...p, asPath: true };
    case 'argv':
      return p.in === 'value' && p.asPath !== true ? { path: p.path, in: 'argv' } : undefined;
    default:
      return undefined;
  }
}

/** Why a quantifier's list is not a list. */
function whyList(list: Named, v: unknown): string {
  const k = kindOf(v);
  if (list.path === undefined) return 'the list is not a list';
  return whyAbsent(list, v) ?? `\`${list.path}\` is ${kindPhrase(k)}, not a list`;
}

function dropUndecidable(why: string): string {
  return why.startsWith('undecidable: ') ? why.slice('undecidable: '.length) : why;
}

/** The right side of `matches`: a glob written as a string, or a list of them (any one matches), compiled here. */
function globsOf(e: Expr): Glob[] {
  const refuse = (at: number): never => {
    throw typeError(
      at,
      '`matches` takes a glob written as a string, like `to matches "*@acme.com"`, or a list of them',
    );
  };
  if (e.kind === 'literal') return typeof e.value === 'string' ? [globOf(e, 'matches')] : refuse(e.start);
  if (e.kind !== 'list' || e.items.length === 0) return refuse(e.start);
  return e.items.map((i) => (typeof i.value === 'string' ? globOf(i, 'matches') : refuse(i.start)));
}

/** A glob written as a string literal, compiled at load; its errors point into the string. */
function globOf(e: LiteralExpr, op: string): Glob {
  try {
    return compileGlob(e.value as string);
  } catch (err) {
    if (err instanceof GlobError) throw typeError(e.start + 1 + err.index, `the glob of \`${op}\`: ${err.message}`);
    throw err;
  }
}

/**
 * How a path reads its root. The caller's fields are fixed (`user`, `team`, `agent`, `roles`, and
 * any verified claim under `claims`); an absent team or agent is missing, as an absent argument is.
 * `$run.steps` without a run view is no steps, as `limits.max_calls` counts them.
 */
function rootReader(e: PathExpr): (input: ConditionInput) => unknown {
  const [first, ...rest] = e.segments;
  const tail = toSegments(rest);
  switch (e.root) {
    case 'args': {
      const segments = toSegments(e.segments);
      return (input) => lookup(input.args, segments);
    }
    case 'context': {
      if (first === undefined)
        throw typeError(e.start, '`$context` is read by a path, like `$context.sandbox.network`');
      const segments = toSegments(e.segments);
      return (input) => (input.context === undefined ? undefined : lookup(input.context, segments));
    }
    case 'env':
      if (first !== undefined) throw typeError(e.start, "`$env` is the environment's name and has no members");
      return (input) => input.env ?? undefined;
    case 'run':
      if (first === 'id' && rest.length === 0) return (input) => input.run?.id;
      if (first === 'steps') return (input) => memberAt(input.run?.steps ?? [], tail);
      if (first === 'approvals') return (input) => memberAt(input.run?.approvals ?? [], tail);
      throw typeError(e.start, '`$run` has `$run.id`, `$run.steps` and `$run.approvals`');
    case 'approval':
      if (first !== undefined && APPROVAL_FIELDS.has(first) && rest.length === 0)
        return (input) => (input.approval === undefined ? undefined : input.approval[first as ApprovalField]);
      throw typeError(e.start, '`$approval` has `kind`, `status`, `decided_by` and `decided_at`');
    case 'caller':
      if (first === 'user' && rest.length === 0) return (input) => input.caller.user;
      if (first === 'team' && rest.length === 0) return (input) => input.caller.team ?? undefined;
      if (first === 'agent' && rest.length === 0) return (input) => input.caller.agent ?? undefined;
      if (first === 'roles') return (input) => memberAt(input.caller.roles, tail);
      if (first === 'claims' && rest.length > 0)
        return (input) => (input.caller.claims === undefined ? undefined : lookup(input.caller.claims, tail));
      throw typeError(e.start, '`$caller` has `user`, `team`, `agent`, `roles` and `claims.NAME`');
  }
}

type ApprovalField = 'kind' | 'status' | 'decided_by' | 'decided_at';
const APPROVAL_FIELDS: ReadonlySet<string> = new Set<ApprovalField>(['kind', 'status', 'decided_by', 'decided_at']);
const STEP_FIELDS: ReadonlySet<string> = new Set(['tool', 'decision']);
const RUN_APPROVAL_FIELDS: ReadonlySet<string> = new Set(['id', 'kind', 'status', 'tool']);

/** What a root path holds when present (./types.ts); rootReader has refused the paths a root lacks. */
function rootType(e: PathExpr): number {
  const [first, second, third] = e.segments;
  const depth = e.segments.length;
  switch (e.root) {
    case 'args':
    case 'context':
      return ANY;
    case 'env':
      return STRING;
    case 'approval':
      return STRING;
    case 'run':
      if (first === 'id') return STRING;
      if (depth === 1) return ARRAY; // $run.steps, $run.approvals
      if (depth === 2) return OBJECT; // $run.steps.N
      if (depth !== 3 || third === undefined) return ANY;
      return (first === 'steps' ? STEP_FIELDS : RUN_APPROVAL_FIELDS).has(third) ? STRING : ANY;
    case 'caller':
      if (first === 'roles') return depth === 1 ? ARRAY : depth === 2 && second !== undefined ? STRING : ANY;
      return first === 'claims' ? ANY : STRING;
  }
}

/** A load error when `o` can never hold one of `types`. */
function check(o: Operand, types: number, use: string): void {
  if ((o.type & types) === 0)
    throw typeError(o.start, `\`${o.text}\` is ${typeName(o.type)}, and ${use} needs ${typeName(types)}`);
}

/** How a message names an operand: "a string literal", "`len(name)` (a number)", "`to`". */
function describe(o: Operand): string {
  if (o.literal !== undefined) return o.literal.value === null ? 'null' : `${typeName(o.type)} literal`;
  return o.type === ANY ? `\`${o.text}\`` : `\`${o.text}\` (${typeName(o.type)})`;
}

const SELF: Segment = { key: '', index: -1 };

/** A member of a computed value (`argv(c).0`, `$run.steps.0.tool`), read as a path from it. */
function memberAt(value: unknown, segments: readonly Segment[]): unknown {
  if (segments.length === 0 || value === undefined) return segments.length === 0 ? value : undefined;
  return lookup({ '': value } as unknown as JsonObject, [SELF, ...segments]);
}

function codePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A high surrogate followed by a low one is one code point.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** Both strings: a prefix; both lists: the first items are equal one by one (three-valued). */
function startsWith(l: unknown, r: unknown): Truth {
  if (typeof l === 'string' && typeof r === 'string') return l.startsWith(r);
  if (Array.isArray(l) && Array.isArray(r)) return itemsEqual(l, r, 0);
  return 'undecidable';
}

function endsWith(l: unknown, r: unknown): Truth {
  if (typeof l === 'string' && typeof r === 'string') return l.endsWith(r);
  if (Array.isArray(l) && Array.isArray(r)) return itemsEqual(l, r, l.length - r.length);
  return 'undecidable';
}

/** `r` equals `l[from…]` item by item: false as soon as one differs, undecidable if one cannot be compared. */
function itemsEqual(l: readonly unknown[], r: readonly unknown[], from: number): Truth {
  if (from < 0 || l.length - from < r.length) return false;
  let undecided = false;
  for (let i = 0; i < r.length; i++) {
    const t = equals(itemAt(l, from + i), itemAt(r, i));
    if (t === false) return false;
    if (t === 'undecidable') undecided = true;
  }
  return undecided ? 'undecidable' : true;
}

/** An item of a list as an operand: a number with its lexeme, as a path would read it. */
function itemAt(list: readonly unknown[], i: number): unknown {
  return lookup({ '': list } as unknown as JsonObject, [SELF, { key: String(i), index: i }]);
}

/** A string holds a substring; a list holds an element (as `in` finds it). */
function contains(l: unknown, r: unknown): Truth {
  if (typeof l === 'string') return typeof r === 'string' ? l.includes(r) : 'undecidable';
  if (Array.isArray(l)) return member(r, l);
  return 'undecidable';
}

/**
 * Kleene and/or. `dominant` is the value that decides the junction on its own (false for and, true for
 * or); the others are evaluated only until it appears, which gives the same truth as evaluating all.
 * With a sink, the reasons kept are those that decided: the dominant operand's, else the first
 * undecidable one's, else all of them.
 */
function junction(children: readonly Node[], dominant: boolean): Node {
  return (input, sink) => {
    let undecided = false;
    let undecidedWhy: string[] | undefined;
    const allWhy: string[] | undefined = sink === undefined ? undefined : [];
    if (sink?.[FULL] === true) {
      // Every operand read; the same Kleene result.
      let saw = false;
      for (const child of children) {
        const local = sub(sink);
        const t = child(input, local);
        sink.push(...(local ?? []));
        if (t === dominant) saw = true;
        else if (t === 'undecidable') undecided = true;
      }
      return saw ? dominant : undecided ? 'undecidable' : !dominant;
    }
    for (let i = 0; i < children.length; i++) {
      const local: Sink = sink === undefined ? undefined : [];
      const t = children[i]!(input, local); // i < length
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
