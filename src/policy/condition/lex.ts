// Condition tokenizer: source text → tokens with positions. A dotted path (`items.0.sku`) is one
// token, so `0.5` inside a path can never be read as a number and no whitespace fits inside a path.
import { decimalOf, type Decimal } from '../../json/decimal.js';
import { ConditionError, MAX_SOURCE_LENGTH } from './errors.js';

export type Keyword = 'and' | 'or' | 'not' | 'in' | 'true' | 'false' | 'null' | StringOp;
/** The operators on strings and lists, written as words like `in`. */
export type StringOp = 'startswith' | 'endswith' | 'contains' | 'matches';
export const STRING_OPS: ReadonlySet<string> = new Set<StringOp>(['startswith', 'endswith', 'contains', 'matches']);
/** Where a path reads from: the arguments (a bare path), or a `$` root. */
export type Root = 'args' | 'caller' | 'context' | 'run' | 'env' | 'approval';
const ROOTS: ReadonlySet<string> = new Set<Root>(['caller', 'context', 'run', 'env', 'approval']);
export type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=';
export type Punct = '(' | ')' | '[' | ']' | ',';

interface Span {
  /** 0-based index of the first character. */
  readonly start: number;
  /** 0-based index just past the last character. */
  readonly end: number;
}

export type Token = Span &
  (
    | { readonly type: 'path'; readonly root: Root; readonly segments: readonly string[]; readonly text: string }
    // `.0`, `.name` after a call's closing parenthesis: a member of its value.
    | { readonly type: 'member'; readonly segments: readonly string[]; readonly text: string }
    | { readonly type: 'keyword'; readonly value: Keyword }
    // `value` is the nearest double, `exact` the number as written: comparisons read both.
    | { readonly type: 'number'; readonly value: number; readonly text: string; readonly exact: Decimal }
    | { readonly type: 'string'; readonly value: string }
    | { readonly type: 'op'; readonly value: CompareOp }
    | { readonly type: 'punct'; readonly value: Punct }
    | { readonly type: 'end' }
  );

// Keywords are lowercase exactly: `True` or `AND` is an ordinary (path) name.
const KEYWORDS: ReadonlySet<string> = new Set<Keyword>([
  'and',
  'or',
  'not',
  'in',
  'true',
  'false',
  'null',
  ...(STRING_OPS as ReadonlySet<StringOp>),
]);

const ESCAPES: Readonly<Record<string, string>> = { '\\': '\\', "'": "'", '"': '"', n: '\n', t: '\t', r: '\r' };

// Array index segments stay within 9 digits (as src/policy/path.ts does), so they are exact integers.
const MAX_INDEX_DIGITS = 9;

export function tokenize(source: string): Token[] {
  if (source.length > MAX_SOURCE_LENGTH) {
    throw new ConditionError(
      'too_long',
      MAX_SOURCE_LENGTH + 1,
      `a condition is at most ${MAX_SOURCE_LENGTH} characters`,
    );
  }
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) {
      i++;
    } else if (isIdentStart(c)) {
      const tok = readWordOrPath(source, i);
      tokens.push(tok);
      i = tok.end;
    } else if (c === 0x24 /* $ */) {
      const tok = readRootPath(source, i);
      tokens.push(tok);
      i = tok.end;
    } else if (
      c === 0x2e /* . */ &&
      tokens.at(-1)?.type === 'punct' &&
      (tokens.at(-1) as { value?: string }).value === ')'
    ) {
      const tok = readMember(source, i);
      tokens.push(tok);
      i = tok.end;
    } else if (isDigit(c) || (c === 0x2d /* - */ && isDigit(source.charCodeAt(i + 1)))) {
      const tok = readNumber(source, i);
      tokens.push(tok);
      i = tok.end;
    } else if (c === 0x22 || c === 0x27) {
      const tok = readString(source, i);
      tokens.push(tok);
      i = tok.end;
    } else {
      const tok = readSymbol(source, i);
      tokens.push(tok);
      i = tok.end;
    }
  }
  tokens.push({ type: 'end', start: source.length, end: source.length });
  return tokens;
}

function readWordOrPath(source: string, start: number): Token {
  const first = readIdent(source, start);
  const word = source.slice(start, first);
  if (source.charCodeAt(first) !== 0x2e /* . */) {
    if (KEYWORDS.has(word)) return { type: 'keyword', value: word as Keyword, start, end: first };
    return { type: 'path', root: 'args', segments: [word], text: word, start, end: first };
  }
  if (KEYWORDS.has(word)) {
    throw new ConditionError('syntax', start + 1, `the keyword \`${word}\` cannot start a path`);
  }
  const { segments, end } = readSegments(source, first, [word]);
  return { type: 'path', root: 'args', segments, text: source.slice(start, end), start, end };
}

/** `$caller.user`, `$context.repo.name`, `$run.steps`, `$env`: a path from a root other than the arguments. */
function readRootPath(source: string, start: number): Token {
  if (!isIdentStart(source.charCodeAt(start + 1))) {
    throw new ConditionError(
      'syntax',
      start + 1,
      "expected a root name after '$': $caller, $context, $run, $env or $approval",
    );
  }
  const nameEnd = readIdent(source, start + 1);
  const name = source.slice(start + 1, nameEnd);
  if (!ROOTS.has(name))
    throw new ConditionError(
      'syntax',
      start + 1,
      // Clipped as the parser shows a token: a long name is a run of the source, maybe a pasted secret.
      `unknown root \`$${name.length > 32 ? `${name.slice(0, 32)}…` : name}\`; the roots are $caller, $context, $run, $env and $approval`,
    );
  const { segments, end } = readSegments(source, nameEnd, []);
  return { type: 'path', root: name as Root, segments, text: source.slice(start, end), start, end };
}

/** `.0.name` after a call: the segments of a member of its value. */
function readMember(source: string, start: number): Token {
  const { segments, end } = readSegments(source, start, []);
  return { type: 'member', segments, text: source.slice(start, end), start, end };
}

/** `.name` and `.index` segments from `from` on, appended to `segments`. */
function readSegments(source: string, from: number, segments: string[]): { segments: string[]; end: number } {
  let i = from;
  while (source.charCodeAt(i) === 0x2e) {
    const segStart = i + 1;
    const c = source.charCodeAt(segStart);
    let segEnd: number;
    if (isIdentStart(c)) {
      segEnd = readIdent(source, segStart);
    } else if (isDigit(c)) {
      segEnd = segStart;
      while (isDigit(source.charCodeAt(segEnd))) segEnd++;
      if (isIdentPart(source.charCodeAt(segEnd))) {
        throw new ConditionError('syntax', segStart + 1, 'a path segment is a name or an array index, not both');
      }
      if (c === 0x30 && segEnd - segStart > 1) {
        throw new ConditionError('syntax', segStart + 1, 'an array index has no leading zeros');
      }
      if (segEnd - segStart > MAX_INDEX_DIGITS) {
        throw new ConditionError('syntax', segStart + 1, `an array index has at most ${MAX_INDEX_DIGITS} digits`);
      }
    } else {
      throw new ConditionError('syntax', segStart + 1, "expected a name or an array index after '.'");
    }
    segments.push(source.slice(segStart, segEnd));
    i = segEnd;
  }
  return { segments, end: i };
}

function readIdent(source: string, start: number): number {
  let i = start + 1;
  while (isIdentPart(source.charCodeAt(i))) i++;
  return i;
}

// JSON number syntax with an optional leading minus: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
function readNumber(source: string, start: number): Token {
  let i = start;
  if (source.charCodeAt(i) === 0x2d) i++;
  if (source.charCodeAt(i) === 0x30) {
    i++;
    if (isDigit(source.charCodeAt(i))) throw new ConditionError('syntax', start + 1, 'a number has no leading zeros');
  } else {
    while (isDigit(source.charCodeAt(i))) i++;
  }
  if (source.charCodeAt(i) === 0x2e) {
    i++;
    if (!isDigit(source.charCodeAt(i)))
      throw new ConditionError('syntax', i + 1, "expected digits after '.' in a number");
    while (isDigit(source.charCodeAt(i))) i++;
  }
  const e = source.charCodeAt(i);
  if (e === 0x65 || e === 0x45) {
    i++;
    const sign = source.charCodeAt(i);
    if (sign === 0x2b || sign === 0x2d) i++;
    if (!isDigit(source.charCodeAt(i)))
      throw new ConditionError('syntax', i + 1, 'expected digits in the exponent of a number');
    while (isDigit(source.charCodeAt(i))) i++;
  }
  const next = source.charCodeAt(i);
  if (isIdentPart(next) || next === 0x2e) {
    throw new ConditionError('syntax', i + 1, 'a number must be followed by a space, an operator or a bracket');
  }
  const text = source.slice(start, i);
  const value = Number(text);
  if (!Number.isFinite(value)) throw new ConditionError('syntax', start + 1, 'the number is too large');
  // Compiled once here so no evaluation re-reads the text. null only for an exponent of more digits
  // than any comparison can use (1e-9999999999999999999): such a literal could never decide.
  const exact = decimalOf(text);
  if (exact === null) throw new ConditionError('syntax', start + 1, 'the exponent of the number is too long');
  return { type: 'number', value, text, exact, start, end: i };
}

function readString(source: string, start: number): Token {
  const quote = source.charCodeAt(start);
  let value = '';
  let i = start + 1;
  for (;;) {
    if (i >= source.length) throw new ConditionError('syntax', start + 1, 'unterminated string');
    const c = source.charCodeAt(i);
    if (c === quote) break;
    if (c < 0x20) {
      throw new ConditionError(
        'syntax',
        i + 1,
        'a control character inside a string must be written as an escape (\\n, \\t, \\r, \\uXXXX)',
      );
    }
    if (c !== 0x5c /* \ */) {
      value += source[i];
      i++;
      continue;
    }
    const esc = source[i + 1];
    if (esc === undefined) throw new ConditionError('syntax', start + 1, 'unterminated string');
    if (esc === 'u') {
      const hex = source.slice(i + 2, i + 6);
      if (!/^[0-9A-Fa-f]{4}$/.test(hex))
        throw new ConditionError('syntax', i + 1, 'expected four hex digits after \\u');
      value += String.fromCharCode(parseInt(hex, 16));
      i += 6;
      continue;
    }
    const mapped = Object.hasOwn(ESCAPES, esc) ? ESCAPES[esc] : undefined;
    if (mapped === undefined) {
      throw new ConditionError('syntax', i + 1, 'unknown escape in a string; use \\\\ \\\' \\" \\n \\t \\r or \\uXXXX');
    }
    value += mapped;
    i += 2;
  }
  return { type: 'string', value, start, end: i + 1 };
}

function readSymbol(source: string, start: number): Token {
  const c = source[start] ?? '';
  const next = source[start + 1];
  const two = c + (next ?? '');
  if (two === '==' || two === '!=' || two === '<=' || two === '>=') {
    return { type: 'op', value: two, start, end: start + 2 };
  }
  if (c === '<' || c === '>') return { type: 'op', value: c, start, end: start + 1 };
  if (c === '(' || c === ')' || c === '[' || c === ']' || c === ',') {
    return { type: 'punct', value: c, start, end: start + 1 };
  }
  throw new ConditionError('syntax', start + 1, unexpectedCharacter(c));
}

function unexpectedCharacter(c: string): string {
  switch (c) {
    case '=':
      return "unexpected '='; compare with '=='";
    case '!':
      return "unexpected '!'; use `not` or '!='";
    case '&':
      return "unexpected '&'; use `and`";
    case '|':
      return "unexpected '|'; use `or`";
    case '.':
      return "unexpected '.'; a path starts with a name and a number with a digit";
    case '-':
      return "unexpected '-'; there is no arithmetic (a negative number is written -5)";
    case '+':
    case '*':
    case '/':
    case '%':
      return `unexpected '${c}'; there is no arithmetic`;
    default: {
      // Quote printable ASCII only: anything else could be part of pasted data.
      const code = c.charCodeAt(0);
      const shown =
        code > 0x20 && code < 0x7f ? `'${c}'` : `character U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
      return `unexpected ${shown}`;
    }
  }
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function isIdentStart(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
}

function isIdentPart(c: number): boolean {
  return isIdentStart(c) || isDigit(c);
}
