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
import { parseCondition, type CallExpr, type Expr, type ListExpr, type LiteralExpr, type PathExpr, type Scalar } from './parse.js';
import { normalizePath, shellWords } from './shell.js';
import { ExactNumber, lookup, toSegments, type Segment } from './values.js';
import { ANY, ARRAY, BOOLEAN, NULL, NUMBER, OBJECT, STRING, typeName, typeOfValue } from './types.js';
import { whyBoolean, whyCompare, whyMember, whyStringOp, type Named } from './why.js';

export { ConditionError } from './errors.js';
export type { Truth } from './compare.js';

export interface ConditionResult {
  truth: Truth;
  /** e.g. "amount > 100 is true", "undecidable: `amount` is missing"; never an argument value. */
  why: string;
}

/**
 * What a condition reads: the tool's arguments (a bare path), and the roots `$caller` (the verified
 * identity), `$context` (the facts the host runtime sent), `$run` (the run view) and `$env`.
 */
export interface ConditionInput {
  readonly args: JsonObject;
  readonly caller: Identity;
  readonly context: JsonObject | undefined;
  readonly run: { readonly id?: string; readonly steps?: readonly { readonly tool: string; readonly decision?: string }[] } | undefined;
  readonly env: string | null;
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

export interface CompiledCondition {
  readonly source: string;
  /** The paths the condition reads, as written (`amount`, `$caller.team`), in source order, without duplicates. */
  readonly paths: readonly string[];
  /** Every read of the arguments and how it is used, in source order. */
  readonly reads: readonly ArgRead[];
  /** Never throws: an internal failure is 'undecidable' (fail closed). */
  evaluate(input: ConditionInput): Truth;
  explain(input: ConditionInput): ConditionResult;
}

/** Reasons collected by explain(); undefined on the evaluate() hot path, which then builds no strings. */
type Sink = string[] | undefined;
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
}

/** The built-ins, the only things a condition can call (docs/spec.md section 3), by their arity. */
const BUILTINS: Readonly<Record<string, { readonly min: number; readonly max: number }>> = {
  lower: { min: 1, max: 1 },
  len: { min: 1, max: 1 },
  path: { min: 1, max: 1 },
  argv: { min: 1, max: 1 },
  count: { min: 2, max: 3 },
};
/** What each built-in gives (./types.ts). */
const RESULT: Readonly<Record<string, number>> = { lower: STRING, len: NUMBER, path: STRING, argv: ARRAY, count: NUMBER };
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
  });
}

class Compiler {
  readonly paths: string[] = [];
  readonly reads: ArgRead[] = [];
  private readonly seen = new Set<string>();

  /**
   * `o` is used where only `types` can decide: a load error when it can never hold one (a built-in,
   * a root or a literal of another type); for a path into the arguments, recorded for the schema check.
   */
  private want(o: Operand, types: number, use: string): void {
    check(o, types, use);
    if (o.arg !== undefined) this.reads.push({ text: o.text, segments: o.arg.segments, column: o.start + 1, wants: types, use });
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
      case 'path':
      case 'call':
        return this.bare(this.operand(e, 'a condition'));
      case 'literal': {
        const value = e.value;
        if (typeof value !== 'boolean') {
          throw typeError(e.start, `${literalKind(value)} is not a condition; compare it with a path, e.g. \`amount > 100\``);
        }
        const why = `the constant ${String(value)}`;
        return (_input, sink) => {
          sink?.push(why);
          return value;
        };
      }
      case 'list':
        throw typeError(e.start, 'a list can only stand on the right of `in`, `startswith` or `endswith`');
    }
  }

  private compare(op: CompareOp, opStart: number, l: Operand, r: Operand): Node {
    if (l.literal !== undefined && r.literal !== undefined) {
      throw typeError(opStart, `'${op}' compares two constants; one side must be a path`);
    }
    const text = `${l.text} ${op} ${r.text}`;
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
    this.pair(l, r, NUMBER | STRING, `\`${op}\``);
    return (input, sink) => {
      const lv = l.read(input);
      const rv = r.read(input);
      const t = order(op, lv, rv);
      if (sink !== undefined) sink.push(t === 'undecidable' ? `undecidable: ${whyCompare(op, l, lv, r, rv)}` : `${text} is ${t}`);
      return t;
    };
  }

  private member(opStart: number, x: Operand, right: Expr): Node {
    if (right.kind === 'list') {
      if (x.literal !== undefined) throw typeError(opStart, '`in` compares two constants; the left side must be a path');
      const items = right.items.map(literalValue);
      // `null` in the list matches any present value, as `== null` does.
      const itemTypes = right.items.some((i) => i.value === null) ? ANY : right.items.reduce((t, i) => t | typeOfValue(i.value), 0);
      this.want(x, itemTypes === 0 ? ANY : itemTypes, '`in` with this list');
      const text = `${x.text} in ${renderList(right)}`;
      const listNamed: Named = { path: undefined };
      return (input, sink) => {
        const xv = x.read(input);
        const t = member(xv, items);
        if (sink !== undefined) sink.push(t === 'undecidable' ? `undecidable: ${whyMember(x, xv, listNamed, items)}` : `${text} is ${t}`);
        return t;
      };
    }
    if (right.kind !== 'path' && right.kind !== 'call') {
      throw typeError(right.start, 'the right side of `in` is a list like ["FR", "DE"], a path to an array, or a call that gives one');
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
      if (sink !== undefined) sink.push(t === 'undecidable' ? `undecidable: ${whyMember(x, xv, arr, av)}` : `${text} is ${t}`);
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
      if (rightExpr.kind !== 'literal' || typeof rightExpr.value !== 'string') {
        throw typeError(rightExpr.start, '`matches` takes a glob written as a string, like `to matches "*@acme.com"`');
      }
      if (l.literal !== undefined) throw typeError(opStart, '`matches` compares two constants; the left side must be a path or a call');
      const glob = globOf(rightExpr, 'matches');
      this.want(l, STRING, '`matches`');
      const text = `${l.text} matches ${renderLiteral(rightExpr)}`;
      return (input, sink) => {
        const v = l.read(input);
        const t: Truth = typeof v === 'string' ? glob.test(v) : 'undecidable';
        if (sink !== undefined) sink.push(t === 'undecidable' ? `undecidable: ${whyStringOp(op, l, v, undefined, undefined)}` : `${text} is ${t}`);
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
    const test = op === 'startswith' ? startsWith : op === 'endswith' ? endsWith : contains;
    const text = `${l.text} ${op} ${r.text}`;
    return (input, sink) => {
      const lv = l.read(input);
      const rv = r.read(input);
      const t = test(lv, rv);
      if (sink !== undefined) sink.push(t === 'undecidable' ? `undecidable: ${whyStringOp(op, l, lv, r, rv)}` : `${text} is ${t}`);
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
        return { path: undefined, literal: e, text: renderLiteral(e), start: e.start, type: typeOfValue(e.value), read: () => value };
      }
      case 'list': {
        if (op !== 'startswith' && op !== 'endswith') {
          throw typeError(e.start, 'a list can only stand on the right of `in`, `startswith` or `endswith`');
        }
        const items = e.items.map(literalValue);
        return { path: undefined, literal: undefined, text: renderList(e), start: e.start, type: ARRAY, read: () => items };
      }
      default:
        throw typeError(e.start, `the operands of ${/^[a-z]/.test(op) ? `\`${op}\`` : `'${op}'`} are paths, calls or literals, not conditions`);
    }
  }

  /** A built-in (BUILTINS) over its compiled arguments, then the member after it, if any. */
  private call(e: CallExpr): Operand {
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
    const value = e.name === 'count' ? this.count(e) : this.unary(e.name, this.operand(e.args[0]!, `${e.name}()`));
    let type = RESULT[e.name] ?? ANY;
    if (e.member.length > 0) {
      // Only argv() gives a list to take a word of; a word is a string.
      if (e.name !== 'argv' || e.member.length !== 1 || !/^(0|[1-9][0-9]*)$/.test(e.member[0]!)) {
        throw typeError(e.start, `\`${e.text}\`: only argv() has members, one word by its index, like \`argv(command).0\``);
      }
      type = STRING;
    }
    const segments = toSegments(e.member);
    const read = segments.length === 0 ? value : (input: ConditionInput) => memberAt(value(input), segments);
    return { path: e.text, call: e.member.length > 0 ? `${e.name}.N` : e.name, literal: undefined, text: e.text, start: e.start, type, read };
  }

  private unary(name: string, x: Operand): (input: ConditionInput) => unknown {
    this.want(x, name === 'len' ? STRING | ARRAY : STRING, `${name}()`);
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
      default: // argv, the only other one-argument built-in
        return (input) => {
          const v = x.read(input);
          return typeof v === 'string' ? shellWords(v) : undefined;
        };
    }
  }

  /** `count(steps, "GLOB")`, `count(steps, "GLOB", "DECISION")`: steps whose tool matches (and whose decision is DECISION). */
  private count(e: CallExpr): (input: ConditionInput) => unknown {
    const steps = this.operand(e.args[0]!, 'count()');
    this.want(steps, ARRAY, 'count()');
    const globArg = e.args[1]!;
    if (globArg.kind !== 'literal' || typeof globArg.value !== 'string') {
      throw typeError(globArg.start, '`count` takes the tools to count as a glob written as a string, like `count($run.steps, "refund")`');
    }
    const glob = globOf(globArg, 'count');
    const decisionArg = e.args[2];
    let decision: string | undefined;
    if (decisionArg !== undefined) {
      if (decisionArg.kind !== 'literal' || typeof decisionArg.value !== 'string' || !DECISIONS.has(decisionArg.value)) {
        throw typeError(decisionArg.start, '`count` takes a decision as its third argument: "allow", "deny", "abort" or "require_approval"');
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
      ...(e.root === 'args' ? { arg: { segments: e.segments } } : {}),
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
      if (first === undefined) throw typeError(e.start, '`$context` is read by a path, like `$context.sandbox.network`');
      const segments = toSegments(e.segments);
      return (input) => (input.context === undefined ? undefined : lookup(input.context, segments));
    }
    case 'env':
      if (first !== undefined) throw typeError(e.start, "`$env` is the environment's name and has no members");
      return (input) => input.env ?? undefined;
    case 'run':
      if (first === 'id' && rest.length === 0) return (input) => input.run?.id;
      if (first === 'steps') return (input) => memberAt(input.run?.steps ?? [], tail);
      throw typeError(e.start, '`$run` has `$run.id` and `$run.steps`');
    case 'caller':
      if (first === 'user' && rest.length === 0) return (input) => input.caller.user;
      if (first === 'team' && rest.length === 0) return (input) => input.caller.team ?? undefined;
      if (first === 'agent' && rest.length === 0) return (input) => input.caller.agent ?? undefined;
      if (first === 'roles') return (input) => memberAt(input.caller.roles, tail);
      if (first === 'claims' && rest.length > 0) return (input) => (input.caller.claims === undefined ? undefined : lookup(input.caller.claims, tail));
      throw typeError(e.start, '`$caller` has `user`, `team`, `agent`, `roles` and `claims.NAME`');
  }
}

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
    case 'run':
      if (first === 'id') return STRING;
      if (depth === 1) return ARRAY; // $run.steps
      if (depth === 2) return OBJECT; // $run.steps.N
      return depth === 3 && (third === 'tool' || third === 'decision') ? STRING : ANY;
    case 'caller':
      if (first === 'roles') return depth === 1 ? ARRAY : depth === 2 && second !== undefined ? STRING : ANY;
      return first === 'claims' ? ANY : STRING;
  }
}

/** A load error when `o` can never hold one of `types`. */
function check(o: Operand, types: number, use: string): void {
  if ((o.type & types) === 0) throw typeError(o.start, `\`${o.text}\` is ${typeName(o.type)}, and ${use} needs ${typeName(types)}`);
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
