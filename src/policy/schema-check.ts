// Conditions checked against the schemas of the tools their rules select (docs/spec.md section 3.6):
// a path a closed schema does not declare, or a use that can never decide with the type the schema
// declares (`amount == "100"` for a number), is a load error, since such a condition is undecidable
// on every valid call and fails closed every time. Cedar's validator does this for its own language;
// Gatehouse does it for policy files. The check only ever refuses: where a schema says nothing sure
// (combinators, `$ref`, pattern properties, open objects) the path is taken as declared, of any type.
import type { JsonObject } from '../json/value.js';
import type { ArgRead, CompiledCondition } from './condition/compile.js';
import { ANY, ARRAY, OBJECT, typeName, typeOfSchema, typeOfValue } from './condition/types.js';
import { selectorsMatch, TOOL_SELECTORS } from './match.js';
import type { LoadProblem } from './errors.js';
import type { CatalogueEntry, PolicyFile } from './model.js';
import type { PolicySource } from './source/common.js';

/** Every rule's conditions against every catalogued tool with a schema that the rule can apply to. */
export function schemaProblems(
  files: readonly { file: PolicyFile; source: PolicySource }[],
  env: string | null,
): LoadProblem[] {
  const entries = files.flatMap((f) => f.file.tools).filter((e) => e.schema !== undefined);
  const problems: LoadProblem[] = [];
  if (entries.length === 0) return problems;
  for (const { file, source } of files) {
    for (const rule of file.rules) {
      const conditions: [string, CompiledCondition][] = [];
      if (rule.when !== undefined) conditions.push(['when', rule.when]);
      if (rule.confirm !== undefined && rule.confirm !== true) conditions.push(['confirm', rule.confirm]);
      if (conditions.length === 0) continue;
      for (const [key, condition] of conditions) {
        // One problem per condition: the first tool it fails on, and how many others.
        let first: string | undefined;
        let others = 0;
        for (const entry of entries) {
          // A glob entry is selected when the file's scope and the rule's selectors take its pattern
          // as a name: exact for names, and conservative for globs (an entry the rule might not
          // select is not checked).
          const subject = { tool: entry.pattern, kind: entry.kind, tags: entry.tags, env };
          if (file.scope !== undefined && !selectorsMatch(file.scope, subject, TOOL_SELECTORS)) continue;
          if (!selectorsMatch(rule.selectors, subject, TOOL_SELECTORS)) continue;
          const message = firstProblem(condition.reads, entry);
          if (message === undefined) continue;
          if (first === undefined) first = message;
          else others++;
        }
        if (first === undefined) continue;
        const path = ['rules', rule.index, key];
        const { line, column } = source.locate(path);
        const more = others === 0 ? '' : ` (and ${others} more ${others === 1 ? 'tool' : 'tools'})`;
        problems.push({ file: source.file, line, column, key: path.join('.'), message: `condition: ${first}${more}` });
      }
    }
  }
  return problems;
}

function firstProblem(reads: readonly ArgRead[], entry: CatalogueEntry): string | undefined {
  for (const read of reads) {
    const found = resolve(entry.schema, read.segments);
    const tool = `tool \`${entry.pattern}\``;
    if (found.undeclared !== undefined) {
      const { at, names, parent } = found.undeclared;
      const path = read.segments.slice(0, at + 1).join('.');
      if ((parent & (OBJECT | ARRAY)) === 0) {
        const holder = read.segments.slice(0, at).join('.');
        return `\`${holder}\` is ${typeName(parent)} in the schema of ${tool}, so \`${path}\` is never there (column ${read.column})`;
      }
      const near = nearest(read.segments[at]!, names);
      const hint = near !== undefined ? ` (did you mean \`${[...read.segments.slice(0, at), near].join('.')}\`?)` : '';
      return `\`${path}\` is not declared by the schema of ${tool}${hint}, so it is never there (column ${read.column})`;
    }
    if ((found.types & read.wants) === 0) {
      return `\`${read.text}\` is ${typeName(found.types)} in the schema of ${tool}, and ${read.use} needs ${typeName(read.wants)} (column ${read.column})`;
    }
  }
  return undefined;
}

interface Resolved {
  /** What the schema says the value at the path can be (ANY when it says nothing sure). */
  readonly types: number;
  /** Set when a closed object (or a fixed-length list) leaves segment `at` out; `names` are what it declares. */
  readonly undeclared?: { readonly at: number; readonly names: readonly string[]; readonly parent: number };
}

const UNKNOWN: Resolved = { types: ANY };
const INDEX = /^(0|[1-9][0-9]*)$/;
/** Keywords past which this check does not follow a schema: the value could be many things. */
const OPAQUE = [
  '$ref',
  '$dynamicRef',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'if',
  'dependentSchemas',
  'patternProperties',
  'unevaluatedItems',
];

function resolve(schema: JsonObject | boolean | undefined, segments: readonly string[]): Resolved {
  let node: unknown = schema;
  for (let at = 0; at < segments.length; at++) {
    if (!isSchemaObject(node) || OPAQUE.some((k) => Object.hasOwn(node as JsonObject, k))) return UNKNOWN;
    const types = typesOf(node);
    const segment = segments[at]!;
    // A member is present only in an object the schema lets hold it, or a list long enough.
    const properties = isSchemaObject(node.properties) ? node.properties : {};
    const declared = Object.hasOwn(properties, segment);
    const closed = node.additionalProperties === false || node.unevaluatedProperties === false;
    const inObject = (types & OBJECT) !== 0 && (declared || !closed);
    const prefix = Array.isArray(node.prefixItems) ? node.prefixItems : [];
    const index = INDEX.test(segment) ? Number(segment) : -1;
    const inList = (types & ARRAY) !== 0 && index >= 0 && (index < prefix.length || node.items !== false);
    if (inObject && inList) return UNKNOWN;
    if (inObject) node = declared ? properties[segment] : node.additionalProperties;
    else if (inList) node = index < prefix.length ? prefix[index] : node.items;
    else return { types: ANY, undeclared: { at, names: Object.keys(properties), parent: types } };
  }
  return isSchemaObject(node) ? { types: typesOf(node) } : UNKNOWN;
}

function isSchemaObject(node: unknown): node is JsonObject {
  return typeof node === 'object' && node !== null && !Array.isArray(node);
}

/** The types a schema node allows, from `const`, `enum` or `type`; ANY when it is opaque or says none. */
function typesOf(node: JsonObject): number {
  if (OPAQUE.some((k) => Object.hasOwn(node, k))) return ANY;
  if (Object.hasOwn(node, 'const')) return typeOfValue(node.const);
  if (Array.isArray(node.enum)) return node.enum.reduce<number>((t, v) => t | typeOfValue(v), 0) || ANY;
  return typeOfSchema(node.type);
}

/** The declared name closest to a misspelt one (at most a third of its letters apart), if any. */
function nearest(name: string, names: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.floor(name.length / 3) + 1;
  for (const candidate of names) {
    const d = distance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** Levenshtein distance, with transpositions counted as one edit (`amuont` is one from `amount`). */
function distance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i]);
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        rows[0]!.push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]!.push(d);
    }
  }
  return rows[a.length]![b.length]!;
}
