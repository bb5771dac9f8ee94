// TOML policy files (smol-toml), with the lines of keys found by a scan of the text, since the
// parser reports none.
import { parse as parseToml, TomlError } from 'smol-toml';
import { START, type KeyPath, type Location, type Parsed } from './common.js';

export function readToml(file: string, text: string): Parsed {
  let value: unknown;
  try {
    value = parseToml(text);
  } catch (err) {
    if (!(err instanceof TomlError)) throw err;
    // smol-toml's message quotes the source line; keep only its first line (no values).
    const first = (err.message.split('\n')[0] ?? 'invalid TOML').replace(/^Invalid TOML document: /, '');
    return { problems: [{ file, line: err.line, column: err.column, key: '', message: `TOML: ${first}` }] };
  }
  const table = tomlKeyLines(text);
  const locate = (path: KeyPath): Location => {
    for (let n = path.length; n >= 0; n--) {
      const hit = table.get(path.slice(0, n).join('\u0000'));
      if (hit) return hit;
    }
    return START;
  };
  return { raw: { value, locate }, problems: [] };
}

/**
 * smol-toml gives no positions for keys, so this line scanner records where each key and table
 * header is written. It understands `[a.b]`, `[[a]]` (counting entries), `key =`, dotted and quoted
 * keys; keys inside inline tables resolve to their line's outer key (good enough to find them).
 */
function tomlKeyLines(text: string): Map<string, Location> {
  const found = new Map<string, Location>();
  const arrayCounts = new Map<string, number>();
  let table: (string | number)[] = [];
  let inMultiline: string | null = null;
  // In a header, a prefix that names an array of tables means its latest element:
  // `[rules.approval]` after the second `[[rules]]` is rules.1.approval.
  const resolveTable = (path: readonly string[]): (string | number)[] => {
    const out: (string | number)[] = [];
    for (const segment of path) {
      out.push(segment);
      const n = arrayCounts.get(out.join('\u0000'));
      if (n !== undefined) out.push(n - 1);
    }
    return out;
  };
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] ?? '';
    if (inMultiline) {
      if (raw.includes(inMultiline)) inMultiline = null;
      continue;
    }
    const line = raw.trimStart();
    const column = raw.length - line.length + 1;
    const here = { line: i + 1, column };
    const header = /^\[(\[)?\s*([^\]]+?)\s*\]\]?/.exec(line);
    if (header) {
      const path = splitTomlKey(header[2] ?? '');
      if (header[1]) {
        const at = [...resolveTable(path.slice(0, -1)), path.at(-1) ?? ''];
        const k = at.join('\u0000');
        const n = arrayCounts.get(k) ?? 0;
        arrayCounts.set(k, n + 1);
        table = [...at, n];
      } else {
        table = resolveTable(path);
      }
      // Every key on the way is written here first unless it was written earlier: `[[budgets]]` is
      // where `budgets` is, and `[tools.refund]` where `tools` is when no earlier line names it.
      for (let n = 1; n <= table.length; n++) {
        const k = table.slice(0, n).join('\u0000');
        if (!found.has(k)) found.set(k, here);
      }
      continue;
    }
    const assign =
      /^((?:"(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)(?:\s*\.\s*(?:"(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+))*)\s*=/.exec(
        line,
      );
    if (assign) {
      const key = [...table, ...splitTomlKey(assign[1] ?? '')];
      if (!found.has(key.join('\u0000'))) found.set(key.join('\u0000'), here);
      const rest = line.slice(assign[0].length);
      const triple = /("""|''')/.exec(rest);
      if (triple && rest.split(triple[1] ?? '').length === 2) inMultiline = triple[1] ?? null;
    }
  }
  return found;
}

function splitTomlKey(key: string): string[] {
  const parts: string[] = [];
  const re = /\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*(?:\.|$)/y;
  let m: RegExpExecArray | null;
  while (re.lastIndex < key.length && (m = re.exec(key))) parts.push(m[1] ?? m[2] ?? m[3] ?? '');
  return parts;
}
