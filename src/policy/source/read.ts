// Reads one policy file (YAML, JSON or TOML) into a plain JSON value plus a locator that turns a
// key path into a line and column, by the reader of its format (json.ts, yaml.ts, toml.ts).
import { pointerSegments } from '../../json/pointer.js';
import { numberLexemes, setNumberLexeme, setOwn, type JsonObject, type JsonValue } from '../../json/value.js';
import type { LoadProblem } from '../errors.js';
import {
  MAX_DEPTH,
  MAX_FILE_BYTES,
  START,
  type KeyPath,
  type Location,
  type Locator,
  type PolicySource,
} from './common.js';
import { readJson } from './json.js';
import { readToml } from './toml.js';
import { readYaml } from './yaml.js';

export type SourceFormat = 'yaml' | 'json' | 'toml';

export function formatOf(file: string): SourceFormat | null {
  const lower = file.toLowerCase();
  if (lower.endsWith('.yaml') || lower.endsWith('.yml')) return 'yaml';
  if (lower.endsWith('.json')) return 'json';
  if (lower.endsWith('.toml')) return 'toml';
  return null;
}

/** Parse a policy file's bytes. Problems are returned, not thrown: the loader collects them all. */
export function readSource(file: string, bytes: Uint8Array): { source?: PolicySource; problems: LoadProblem[] } {
  const problem = (message: string, at: Location = START, key = ''): { problems: LoadProblem[] } => ({
    problems: [{ file, line: at.line, column: at.column, key, message }],
  });
  if (bytes.length > MAX_FILE_BYTES) return problem(`file is larger than ${MAX_FILE_BYTES} bytes`);
  const format = formatOf(file);
  if (format === null) return problem('not a policy file (want .yaml, .yml, .json or .toml)');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes); // also drops one leading BOM
  } catch {
    return problem('file is not valid UTF-8');
  }
  const parsed =
    format === 'yaml' ? readYaml(file, text) : format === 'json' ? readJson(file, text) : readToml(file, text);
  if (!parsed.raw) return { problems: parsed.problems };
  const { locate } = parsed.raw;
  const { value, problems } = toJson(file, parsed.raw.value, locate);
  return problems.length > 0 ? { problems } : { source: { file, value, locate }, problems: [] };
}

/**
 * Re-build the parsed value as ordinary JSON objects (TOML gives null-prototype objects, YAML may
 * give non-JSON values) and enforce the depth limit. Anything that is not JSON data is a problem.
 */
function toJson(file: string, raw: unknown, locate: Locator): { value: JsonValue; problems: LoadProblem[] } {
  const problems: LoadProblem[] = [];
  const report = (path: KeyPath, message: string): void => {
    problems.push({ file, ...locate(path), key: path.join('.'), message });
  };
  const copy = (v: unknown, path: (string | number)[]): JsonValue => {
    // As the JSON reader counts it: at most MAX_DEPTH nested arrays/objects (the root is the first).
    if (path.length > MAX_DEPTH || (path.length === MAX_DEPTH && typeof v === 'object' && v !== null)) {
      report(path, `nesting deeper than ${MAX_DEPTH}`);
      return null;
    }
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) report(path, 'numbers must be finite');
      return v;
    }
    if (Array.isArray(v))
      return withLexemesOf(
        v,
        v.map((item, i) => copy(item, [...path, i])),
      );
    const proto = typeof v === 'object' ? Object.getPrototypeOf(v) : undefined;
    if (typeof v === 'object' && (proto === null || proto === Object.prototype)) {
      const out: JsonObject = {};
      for (const key of Object.keys(v)) setOwn(out, key, copy((v as Record<string, unknown>)[key], [...path, key]));
      return withLexemesOf(v, out);
    }
    report(path, 'only plain data is allowed (no dates, binary or other typed values)');
    return null;
  };
  return { value: copy(raw, []), problems };
}

/** `to` (a copy of `from`) with the number lexemes `from` has: numbers stay as written. */
function withLexemesOf<T extends object>(from: object, to: T): T {
  const recorded = numberLexemes(from);
  if (recorded !== undefined) for (const [key, lexeme] of recorded) setNumberLexeme(to, key, lexeme);
  return to;
}

/**
 * The key path of a JSON pointer into a parsed document (as ajv reports errors): array indexes become
 * numbers, so locate() can follow them; object keys stay strings even when they look numeric.
 */
export function keyPathOf(doc: unknown, pointer: string): (string | number)[] {
  const out: (string | number)[] = [];
  let node: unknown = doc;
  for (const seg of pointerSegments(pointer)) {
    if (Array.isArray(node)) {
      out.push(Number(seg));
      node = node[Number(seg)];
    } else {
      out.push(seg);
      node =
        node !== null && typeof node === 'object' && Object.hasOwn(node, seg)
          ? (node as Record<string, unknown>)[seg]
          : undefined;
    }
  }
  return out;
}
