// YAML policy files: the core schema only (no anchors, aliases, merge keys or custom tags), every key
// a string, numbers kept as written where YAML and JSON spell them alike.
import {
  Lexer,
  LineCounter,
  Parser,
  parseDocument,
  visit,
  isAlias,
  isMap,
  isNode,
  isPair,
  isScalar,
  isSeq,
  type Node,
} from 'yaml';
import { isNumberLexeme, setNumberLexeme } from '../../json/value.js';
import type { LoadProblem } from '../errors.js';
import { MAX_DEPTH, START, type KeyPath, type Location, type Parsed } from './common.js';

export function readYaml(file: string, text: string): Parsed {
  // Before composing: the yaml package composes recursively and only survives deep nesting by
  // catching the stack overflow, after seconds and 100+ MB for 100,000 levels. Refuse it first.
  const tooDeep = yamlNestingOverflow(text);
  if (tooDeep !== null) {
    return {
      problems: [
        { file, ...textOffsetToLocation(text, tooDeep), key: '', message: `nesting deeper than ${MAX_DEPTH}` },
      ],
    };
  }
  const lines = new LineCounter();
  // YAML 1.2 core schema: `yes` is a string, `<<` is a plain key (refused below), duplicate keys are errors.
  const doc = parseDocument(text, {
    lineCounter: lines,
    schema: 'core',
    merge: false,
    uniqueKeys: true,
    strict: true,
    customTags: [],
    prettyErrors: false,
  });
  const at = (offset: number): Location => {
    const pos = lines.linePos(offset);
    return { line: pos.line, column: pos.col };
  };
  const problems: LoadProblem[] = [];
  for (const e of [...doc.errors, ...doc.warnings]) {
    // Reported below with their key paths: every tag, and duplicate keys (found among string keys).
    if (e.code === 'TAG_RESOLVE_FAILED' || e.code === 'DUPLICATE_KEY') continue;
    problems.push({ file, ...at(e.pos[0]), key: '', message: `YAML: ${yamlMessage(e.code)}` });
  }
  // Anchors, aliases, merge keys and explicit tags are refused outright: a policy is plain data,
  // and alias expansion is how YAML bombs work.
  // The key path is worked out only for a node that is refused: most files have none.
  const refuse = (ancestry: readonly unknown[], target: unknown, offset: number, message: string): void => {
    problems.push({ file, ...at(offset), key: yamlKeyPath(ancestry, target), message });
  };
  visit(doc, {
    Node(_, node, path) {
      const offset = node.range?.[0] ?? 0;
      if (isAlias(node)) refuse(path, node, offset, 'YAML aliases are not allowed');
      else if (node.anchor) refuse(path, node, offset, 'YAML anchors are not allowed');
      if (node.tag) refuse(path, node, offset, 'YAML tags are not allowed');
      // (Here, not in a `Map` visitor: visit() calls only the most specific one of Map and Node.)
      if (isMap(node)) {
        const seen = new Set<string>();
        for (const pair of node.items) {
          if (!isScalar(pair.key) || typeof pair.key.value !== 'string') continue; // refused in Pair
          if (seen.has(pair.key.value)) refuse([...path, node], pair, pair.key.range?.[0] ?? 0, 'YAML: duplicate key');
          seen.add(pair.key.value);
        }
      }
    },
    Pair(_, pair, path) {
      const offset = (isNode(pair.key) ? pair.key.range?.[0] : undefined) ?? 0;
      if (isScalar(pair.key) && pair.key.value === '<<' && pair.key.type === 'PLAIN') {
        refuse(path, pair, offset, 'YAML merge keys (<<) are not allowed');
      } else if (!isScalar(pair.key) || typeof pair.key.value !== 'string') {
        // `2024:` would become the string "2024" (and collide with a quoted "2024": unseen by
        // uniqueKeys, which compares 2024 with "2024"), `0x1F:` the tool "31", `? [a, b]` "[ a, b ]".
        refuse(path, pair, offset, 'a key must be a string: quote it');
      }
    },
  });
  if (problems.length > 0) return { problems };
  const value = doc.toJS({ maxAliasCount: 0 }) as unknown;
  recordNumberLexemes(doc.contents, value);
  const locate = (path: KeyPath, atKey = false): Location => {
    for (let n = path.length; n >= 0; n--) {
      const node = nodeAt(doc.contents as Node | null, path.slice(0, n), atKey && n === path.length);
      if (node?.range) return at(node.range[0]);
    }
    return START;
  };
  return { raw: { value, locate }, problems: [] };
}

/**
 * The offset where the YAML text opens its (MAX_DEPTH + 1)th nested collection, or null when it never
 * does. The yaml package's CST parser is iterative (an explicit stack of open nodes), so it is driven
 * lexeme by lexeme and stopped as soon as the open collections exceed what toJson accepts.
 */
function yamlNestingOverflow(text: string): number | null {
  const limit = MAX_DEPTH;
  const parser = new Parser();
  for (const lexeme of new Lexer().lex(text)) {
    for (const _ of parser.next(lexeme)); // the tokens are not needed, only the stack of open nodes
    const stack = parser.stack;
    if (stack.length <= limit) continue;
    // Most of the stack is open collections; the rest (the document, a pending value) is a bounded few.
    let open = 0;
    for (const token of stack)
      if (token.type === 'block-map' || token.type === 'block-seq' || token.type === 'flow-collection') open++;
    if (open > limit || stack.length > 2 * limit + 8) return parser.offset;
  }
  return null;
}

function textOffsetToLocation(text: string, offset: number): Location {
  const before = text.slice(0, Math.min(offset, text.length));
  const lastNl = before.lastIndexOf('\n');
  let line = 1;
  for (let i = before.indexOf('\n'); i !== -1; i = before.indexOf('\n', i + 1)) line++;
  return { line, column: before.length - lastNl };
}

/**
 * Walks the YAML nodes beside the value toJS built from them, recording number lexemes: a number
 * written in JSON's grammar keeps its text, as the request parser keeps a body's (a case's
 * `1234567890123456789` must not become ...800 before it is decided on).
 */
function recordNumberLexemes(node: unknown, value: unknown): void {
  if (isMap(node) && value !== null && typeof value === 'object') {
    for (const pair of node.items) {
      if (!isScalar(pair.key) || typeof pair.key.value !== 'string') continue; // refused already
      const key = pair.key.value;
      const member = (value as Record<string, unknown>)[key];
      if (isScalar(pair.value)) recordScalar(pair.value, value, key, member);
      else recordNumberLexemes(pair.value, member);
    }
  } else if (isSeq(node) && Array.isArray(value)) {
    node.items.forEach((item, i) => {
      if (isScalar(item)) recordScalar(item, value, i, value[i]);
      else recordNumberLexemes(item, value[i]);
    });
  }
}

function recordScalar(node: { source?: string }, container: object, key: string | number, member: unknown): void {
  if (typeof member !== 'number' || node.source === undefined) return;
  const text = jsonSpelling(node.source);
  if (text !== null && String(member) !== text) setNumberLexeme(container, key, text);
}

// YAML 1.2 core spellings JSON does not have: a plus sign, a dot without digits on one side, leading
// zeros, hexadecimal and octal integers. Longer sources are left alone (BigInt reads them in time
// quadratic in their length); a number written that way keeps only its double.
const YAML_DECIMAL = /^([-+]?)([0-9]*)(?:\.([0-9]*))?([eE][-+]?[0-9]+)?$/;

const YAML_RADIX = /^([-+]?)0([xo])([0-9a-fA-F]+)$/;

const MAX_SPELLING = 400;

/** The number a YAML scalar writes, in JSON's grammar and exactly (not through a double); null if none. */
function jsonSpelling(source: string): string | null {
  if (isNumberLexeme(source)) return source;
  if (source.length > MAX_SPELLING) return null;
  const radix = YAML_RADIX.exec(source);
  if (radix !== null) {
    const [, sign = '', base = '', digits = ''] = radix;
    if (base === 'o' && /[89a-fA-F]/.test(digits)) return null;
    return (sign === '-' ? '-' : '') + BigInt(`0${base}${digits}`).toString();
  }
  const m = YAML_DECIMAL.exec(source);
  if (m === null) return null;
  const [, sign = '', int = '', frac, exponent = ''] = m;
  if (int === '' && (frac === undefined || frac === '')) return null;
  const text = `${sign === '-' ? '-' : ''}${int.replace(/^0+(?=[0-9])/, '') || '0'}${frac ? `.${frac}` : ''}${exponent}`;
  return isNumberLexeme(text) ? text : null;
}

/**
 * The dotted key path of `target` from the visitor's ancestry (document, maps, pairs, sequences):
 * a map contributes the key of the pair on the way, a sequence the index. A node that is itself a
 * key (a tag on a key) is named by its pair's key path.
 */
function yamlKeyPath(ancestry: readonly unknown[], target: unknown): string {
  const chain = [...ancestry, target];
  const segments: string[] = [];
  for (let i = 1; i < chain.length; i++) {
    const parent = chain[i - 1];
    const child = chain[i];
    // As written: a refused non-string key (`0x1F`) would otherwise read as what it resolves to (`31`).
    if (isPair(child) && isScalar(child.key))
      segments.push(
        typeof child.key.value === 'string' ? child.key.value : (child.key.source ?? String(child.key.value)),
      );
    else if (isSeq(parent)) segments.push(String(parent.items.indexOf(child as never)));
  }
  return segments.join('.');
}

function nodeAt(root: Node | null, path: KeyPath, atKey: boolean): Node | null {
  let node: Node | null = root;
  for (let i = 0; i < path.length && node; i++) {
    const seg = path[i];
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(seg));
      if (!pair) return null;
      node = last && atKey ? (pair.key as Node) : (pair.value as Node | null);
    } else if (isSeq(node) && typeof seg === 'number') {
      node = (node.items[seg] as Node | undefined) ?? null;
    } else {
      return null;
    }
  }
  return node;
}

function yamlMessage(code: string): string {
  switch (code) {
    case 'DUPLICATE_KEY':
      return 'duplicate key';
    case 'MULTIPLE_DOCS':
      return 'a policy file holds exactly one YAML document';
    default:
      return `syntax error (${code.toLowerCase()})`;
  }
}
