// Amounts in a tool's schema (docs/spec.md section 2.2, "Amounts"): the annotation keywords that
// mark a number as money and say its currency, their checks at load, and the list of money fields
// the operator page reads to show an amount with its currency and digit grouping. Annotations only:
// they never change what a schema accepts, and no decision reads them.
import type { KeywordDefinition } from 'ajv';
import { isJsonObject, type JsonObject, type JsonValue } from '../json/value.js';

export const MONEY_FORMAT = 'x-gatehouse-format';
export const MONEY_CURRENCY = 'x-gatehouse-currency';
export const MONEY_CURRENCY_PATH = 'x-gatehouse-currency-path';

/** An argument path as a rule's approval shape writes it: dot-separated property names. */
const ARG_PATH = /^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$/;

/**
 * The keywords, for ajv's strict mode (which refuses unknown keywords): annotations (no validation
 * code), whose values ajv checks against these meta-schemas when the schema compiles. ISO 4217
 * codes are three capital letters.
 */
export const MONEY_KEYWORDS: readonly KeywordDefinition[] = [
  { keyword: MONEY_FORMAT, schemaType: 'string', metaSchema: { enum: ['money'] } },
  { keyword: MONEY_CURRENCY, schemaType: 'string', metaSchema: { type: 'string', pattern: '^[A-Z]{3}$' } },
  {
    keyword: MONEY_CURRENCY_PATH,
    schemaType: 'string',
    metaSchema: { type: 'string', maxLength: 256, pattern: ARG_PATH.source },
  },
];

/** A money field of a tool's arguments: where the number is, and its currency or where the code is. */
export type MoneyField =
  | { readonly path: string; readonly currency: string }
  | { readonly path: string; readonly currency_path: string };

/** What is wrong with an annotation, where (a key path inside the schema). */
export interface MoneyProblem {
  readonly at: readonly (string | number)[];
  readonly message: string;
}

/**
 * The money fields of a schema, and what is wrong with its annotations. Fields are found under
 * `properties`, nested objects included (paths joined by dots, as approval shapes name arguments);
 * an annotation anywhere else (inside `items`, `anyOf`, `$defs`) has no one argument path and is a
 * problem, as are a `money` format without exactly one of the two currency keywords, a currency
 * keyword without the format, and a money field whose `type` admits no number.
 */
export function moneyFields(schema: JsonObject | boolean): { fields: MoneyField[]; problems: MoneyProblem[] } {
  const fields: MoneyField[] = [];
  const problems: MoneyProblem[] = [];
  const visit = (node: JsonValue, at: (string | number)[], path: string[] | null): void => {
    if (Array.isArray(node)) {
      node.forEach((v, i) => {
        visit(v, [...at, i], null);
      });
      return;
    }
    if (!isJsonObject(node)) return;
    const annotated = [MONEY_FORMAT, MONEY_CURRENCY, MONEY_CURRENCY_PATH].filter((k) => Object.hasOwn(node, k));
    if (annotated.length > 0) {
      const field = moneyField(node, at, path, problems);
      if (field !== null) fields.push(field);
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === 'properties' && isJsonObject(value)) {
        for (const [name, sub] of Object.entries(value))
          visit(sub, [...at, key, name], path === null ? null : [...path, name]);
      } else if (typeof value === 'object' && value !== null) visit(value, [...at, key], null);
    }
  };
  if (typeof schema !== 'boolean') visit(schema, [], []);
  return { fields, problems };
}

function moneyField(
  node: JsonObject,
  at: (string | number)[],
  path: string[] | null,
  problems: MoneyProblem[],
): MoneyField | null {
  const fail = (message: string): null => {
    problems.push({ at, message });
    return null;
  };
  if (node[MONEY_FORMAT] !== 'money')
    return fail(`\`${MONEY_CURRENCY}\` and \`${MONEY_CURRENCY_PATH}\` go with \`${MONEY_FORMAT}: money\``);
  if (path === null || path.length === 0)
    return fail('a money annotation belongs on an argument, under `properties` (an argument path names it)');
  const currency = node[MONEY_CURRENCY];
  const currencyPath = node[MONEY_CURRENCY_PATH];
  if ((currency === undefined) === (currencyPath === undefined))
    return fail(`a money field needs exactly one of \`${MONEY_CURRENCY}\` (the code) and \`${MONEY_CURRENCY_PATH}\``);
  const type = node['type'];
  const types = typeof type === 'string' ? [type] : Array.isArray(type) ? type : null;
  if (types !== null && !types.includes('number') && !types.includes('integer'))
    return fail('a money field is a number: its `type` must admit `number` or `integer`');
  // ajv's meta-schemas have checked the values' form when the schema compiled.
  return typeof currency === 'string'
    ? { path: path.join('.'), currency }
    : { path: path.join('.'), currency_path: String(currencyPath) };
}

/** What moneyOf reads of a policy set (./model.ts PolicySet; structural, so model.ts may import this file). */
export interface MoneyCatalogue {
  plan(tool: string): { readonly entries: readonly { readonly money?: readonly MoneyField[] }[] };
}

/**
 * The money fields of a tool under the serving set: those of each catalogue entry that describes
 * it, in load order, the first entry to name a path giving its currency.
 */
export function moneyOf(set: MoneyCatalogue, tool: string): MoneyField[] {
  const out: MoneyField[] = [];
  for (const entry of set.plan(tool).entries)
    for (const field of entry.money ?? []) if (!out.some((f) => f.path === field.path)) out.push(field);
  return out;
}
