// Generated tool arguments for the property cases of policy test files (never.ts): from a tool's JSON
// Schema when it has one, else arbitrary JSON shaped by the argument paths its rules' conditions read.
//
// The schema subset read (draft 2020-12, https://json-schema.org/draft/2020-12/json-schema-validation):
// type, const, enum, properties, required, additionalProperties, items, prefixItems, minItems,
// maxItems, uniqueItems, minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf,
// minLength, maxLength, pattern (what fast-check's stringMatching can write), a few formats, allOf,
// anyOf, oneOf and local $ref. Anything else is not generated for: the caller checks every value
// with the tool's compiled schema and skips those it refuses, so an unread keyword costs runs,
// never a wrong answer.
import fc from 'fast-check';
import { type JsonObject, type JsonValue, setOwn } from '../json/value.js';

/** Values taken from the policies, so generated arguments reach the branches rules are written for. */
export interface ValueHints {
  /** Number literals of the conditions. */
  readonly numbers: readonly number[];
  /** String literals of the conditions. */
  readonly strings: readonly string[];
  /** The dotted argument paths the conditions read (`order.total`, `items.0.sku`). */
  readonly paths: readonly string[];
  /** Strings that reach what the conditions test, by argument path (./probes.ts). */
  readonly at?: ReadonlyMap<string, fc.Arbitrary<string>>;
}

export const NO_HINTS: ValueHints = { numbers: [], strings: [], paths: [] };

// Text the pii guard finds (guards.ts), so guards are exercised too.
const PII_SAMPLES = ['jane@example.com', '+44 20 7946 0958', '4111 1111 1111 1111', 'GB82 WEST 1234 5698 7654 32'];

// Schema nesting followed: from SHALLOW_DEPTH on, objects get their required members only and arrays
// their fewest items, so a recursive $ref ends in values it accepts; past MAX_DEPTH, any JSON.
const SHALLOW_DEPTH = 5;
const MAX_DEPTH = 16;
const MAX_EXTRA_ITEMS = 4; // items beyond minItems
const MAX_EXTRA_KEYS = 2; // keys beyond the declared properties, where the schema admits them

// A value of one branch shrinks towards the first branch's simplest too: a counterexample's string
// becomes "" rather than staying the sample it was drawn as.
const CROSS = { withCrossShrink: true } as const;

type Schema = Readonly<Record<string, unknown>>;

interface Context {
  readonly root: unknown;
  readonly hints: ValueHints;
}

/** Arguments for a tool with this schema: mostly ones it accepts. */
export function schemaArbitrary(schema: unknown, hints: ValueHints = NO_HINTS): fc.Arbitrary<JsonValue> {
  return fromSchema(schema, { root: schema, hints }, 0, '');
}

/** Arguments for a tool without a schema: objects holding the paths the conditions read, or any JSON object. */
export function freeArgsArbitrary(hints: ValueHints = NO_HINTS): fc.Arbitrary<JsonObject> {
  const any = objectOf(jsonArbitrary(hints), hints);
  if (hints.paths.length === 0) return any;
  return fc.oneof(CROSS, { arbitrary: pathsArbitrary(hints), weight: 3 }, { arbitrary: any, weight: 1 });
}

/** Any JSON value, finite numbers only, no -0, well-formed strings: what a strict body can hold. */
export function jsonArbitrary(hints: ValueHints = NO_HINTS): fc.Arbitrary<JsonValue> {
  const { value } = fc.letrec<{ value: JsonValue; array: JsonValue[]; object: JsonObject }>((tie) => ({
    value: fc.oneof({ ...CROSS, depthSize: 'small', maxDepth: 3 }, scalarArbitrary(hints), tie('array'), tie('object')),
    array: fc.array(tie('value'), { maxLength: 3 }),
    object: objectOf(tie('value'), hints),
  }));
  return value;
}

function objectOf(values: fc.Arbitrary<JsonValue>, hints: ValueHints): fc.Arbitrary<JsonObject> {
  const firstSegments = [...new Set(hints.paths.map((p) => p.split('.')[0]!))];
  const key =
    firstSegments.length > 0
      ? fc.oneof(CROSS, fc.constantFrom(...firstSegments), fc.string({ maxLength: 8 }))
      : fc.string({ maxLength: 8 });
  return fc.uniqueArray(fc.tuple(key, values), { maxLength: 3, selector: ([k]) => k }).map(toObject);
}

function toObject(entries: readonly (readonly [string, JsonValue])[]): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of entries) setOwn(out, k, v);
  return out;
}

function scalarArbitrary(hints: ValueHints): fc.Arbitrary<JsonValue> {
  return fc.oneof(CROSS, fc.constant(null), fc.boolean(), numberArbitrary({}, hints), stringArbitrary({}, hints));
}

/** A tree of the condition paths, each present or not, leaves any scalar. */
function pathsArbitrary(hints: ValueHints): fc.Arbitrary<JsonObject> {
  interface Node {
    children: Map<string, Node>;
  }
  const root: Node = { children: new Map() };
  for (const path of hints.paths) {
    let node = root;
    for (const seg of path.split('.')) {
      let next = node.children.get(seg);
      if (!next) node.children.set(seg, (next = { children: new Map() }));
      node = next;
    }
  }
  const scalar = scalarArbitrary(hints);
  const build = (node: Node, at: string): fc.Arbitrary<JsonValue> => {
    if (node.children.size === 0) {
      const targeted = hints.at?.get(at);
      return targeted === undefined
        ? scalar
        : fc.oneof(CROSS, { arbitrary: scalar, weight: 1 }, { arbitrary: targeted, weight: 3 });
    }
    const keys = [...node.children.keys()];
    if (keys.every((k) => /^\d+$/.test(k))) {
      // `items.0.sku`: an array long enough for the highest index read, the others null.
      const length = Math.max(...keys.map(Number)) + 1;
      const slots = Array.from({ length }, (_, i) => {
        const child = node.children.get(String(i));
        return child ? build(child, `${at}.${i}`) : fc.constant(null);
      });
      return fc.oneof(CROSS, fc.tuple(...slots), scalar);
    }
    const members = keys.map((k) =>
      fc.option(fc.tuple(fc.constant(k), build(node.children.get(k)!, `${at}.${k}`)), { nil: undefined }),
    );
    return fc.oneof(
      CROSS,
      fc.tuple(...members).map((m) => toObject(m.filter((e) => e !== undefined))),
      scalar,
    );
  };
  const members = [...root.children.keys()].map((k) =>
    fc.option(fc.tuple(fc.constant(k), build(root.children.get(k)!, k)), { nil: undefined }),
  );
  return fc.tuple(...members).map((m) => toObject(m.filter((e) => e !== undefined)));
}

function isSchema(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `at`: the dotted argument path of the value ('' for the arguments, undefined where not followed). */
function fromSchema(schema: unknown, ctx: Context, depth: number, at?: string): fc.Arbitrary<JsonValue> {
  if (schema === false) return fc.constant(null); // nothing is valid: the caller skips it
  if (!isSchema(schema) || depth > MAX_DEPTH) return jsonArbitrary(ctx.hints);
  if (typeof schema.$ref === 'string') {
    const { $ref, ...rest } = schema;
    const target = resolveRef(ctx.root, $ref);
    return target === undefined ? jsonArbitrary(ctx.hints) : fromSchema(merge(rest, target), ctx, depth + 1, at);
  }
  if (Object.hasOwn(schema, 'const')) return fc.constant(schema.const as JsonValue);
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return fc.constantFrom(...(schema.enum as JsonValue[]));
  if (Array.isArray(schema.allOf)) {
    const { allOf, ...rest } = schema;
    return fromSchema(
      (allOf as unknown[]).reduce<Schema>((acc, s) => merge(acc, s), rest),
      ctx,
      depth + 1,
      at,
    );
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.length > 0) {
      const { [key]: _, ...rest } = schema;
      return fc.oneof(CROSS, ...branches.map((b) => fromSchema(merge(rest, b), ctx, depth + 1, at)));
    }
  }
  const types = typesOf(schema);
  if (types.length === 0) return jsonArbitrary(ctx.hints);
  return fc.oneof(CROSS, ...types.map((t) => ofType(t, schema, ctx, depth, at)));
}

function ofType(type: string, s: Schema, ctx: Context, depth: number, at: string | undefined): fc.Arbitrary<JsonValue> {
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return integerArbitrary(s, ctx.hints);
    case 'number':
      return numberArbitrary(s, ctx.hints);
    case 'string':
      return stringArbitrary(s, ctx.hints, at);
    case 'array':
      return arrayArbitrary(s, ctx, depth, at);
    case 'object':
      return objectArbitrary(s, ctx, depth, at);
    default:
      return jsonArbitrary(ctx.hints);
  }
}

/** The declared types, else the ones its keywords imply. */
function typesOf(s: Schema): string[] {
  if (typeof s.type === 'string') return [s.type];
  if (Array.isArray(s.type)) return s.type.filter((t): t is string => typeof t === 'string');
  const implied: string[] = [];
  if (['properties', 'required', 'additionalProperties'].some((k) => k in s)) implied.push('object');
  if (['items', 'prefixItems', 'minItems', 'maxItems'].some((k) => k in s)) implied.push('array');
  if (['minLength', 'maxLength', 'pattern', 'format'].some((k) => k in s)) implied.push('string');
  if (['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'].some((k) => k in s))
    implied.push('number');
  return implied;
}

/** `#/$defs/name` and other JSON pointers into the same schema; anything else is not followed. */
function resolveRef(root: unknown, ref: string): unknown {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const seg = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    if (!isSchema(node) && !Array.isArray(node)) return undefined;
    if (!Object.hasOwn(node, seg)) return undefined;
    node = (node as Record<string, unknown>)[seg];
  }
  return node;
}

/** Both schemas' constraints at once, roughly (allOf, a branch of anyOf under its parent): the check sorts out the rest. */
function merge(a: Schema, b: unknown): Schema {
  if (b === true || !isSchema(b)) return a;
  const out: Record<string, unknown> = { ...a, ...b };
  if (isSchema(a.properties) && isSchema(b.properties)) out.properties = { ...a.properties, ...b.properties };
  if (Array.isArray(a.required) && Array.isArray(b.required))
    out.required = [...new Set([...a.required, ...b.required])];
  return out;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

interface Bounds {
  lo: number;
  hi: number;
  loOpen: boolean;
  hiOpen: boolean;
}

function boundsOf(s: Schema): Bounds {
  let lo = -Number.MAX_VALUE;
  let hi = Number.MAX_VALUE;
  let loOpen = false;
  let hiOpen = false;
  const min = num(s.minimum);
  const max = num(s.maximum);
  const xmin = num(s.exclusiveMinimum);
  const xmax = num(s.exclusiveMaximum);
  if (min !== undefined) lo = min;
  if (xmin !== undefined && xmin >= lo) [lo, loOpen] = [xmin, true];
  if (max !== undefined) hi = max;
  if (xmax !== undefined && xmax <= hi) [hi, hiOpen] = [xmax, true];
  return { lo, hi, loOpen, hiOpen };
}

function within(b: Bounds, n: number): boolean {
  return (b.loOpen ? n > b.lo : n >= b.lo) && (b.hiOpen ? n < b.hi : n <= b.hi);
}

/** Number literals of the policies, and their neighbours: where `amount > 100` changes its mind. */
function numberHints(hints: ValueHints, b: Bounds, integral: boolean): number[] {
  const near = hints.numbers.flatMap((n) => (integral ? [n - 1, n, n + 1] : [n - 1, n - 0.5, n, n + 0.5, n + 1]));
  return [...new Set(near)].filter((n) => Number.isFinite(n) && within(b, n) && (!integral || Number.isSafeInteger(n)));
}

/** The integers a schema admits: bounds, and a whole `multipleOf` as the step between them. */
function integerRange(s: Schema): { lo: number; hi: number; step: number } | null {
  const b = boundsOf(s);
  const lo = Math.max(b.loOpen ? Math.floor(b.lo) + 1 : Math.ceil(b.lo), Number.MIN_SAFE_INTEGER);
  const hi = Math.min(b.hiOpen ? Math.ceil(b.hi) - 1 : Math.floor(b.hi), Number.MAX_SAFE_INTEGER);
  const m = num(s.multipleOf);
  const step = m !== undefined && Number.isInteger(m) && m > 0 ? m : 1;
  return Math.ceil(lo / step) <= Math.floor(hi / step) ? { lo, hi, step } : null;
}

/** The admitted integer nearest zero: where a counterexample's number shrinks to. */
function simplestInteger(r: { lo: number; hi: number; step: number }): number {
  return Math.min(Math.max(0, Math.ceil(r.lo / r.step)), Math.floor(r.hi / r.step)) * r.step;
}

// The first branch of a number's arbitrary is the simplest number admitted: a counterexample found
// with any other branch is tried with it first (CROSS), so `amount: 99` shrinks to `amount: 0` when
// 0 breaks the property too.
function integerArbitrary(s: Schema, hints: ValueHints): fc.Arbitrary<JsonValue> {
  const r = integerRange(s);
  if (r === null) return fc.constant(num(s.minimum) ?? 0); // no such integer: refused by the check
  const kLo = Math.ceil(r.lo / r.step);
  const kHi = Math.floor(r.hi / r.step);
  const multiples = (lo: number, hi: number): fc.Arbitrary<number> =>
    fc.integer({ min: lo, max: hi }).map((k) => k * r.step);
  // Small numbers near zero are what most rules compare against.
  const simplest = simplestInteger(r) / r.step;
  const arbs: fc.WeightedArbitrary<number>[] = [
    { arbitrary: fc.constant(simplest * r.step), weight: 1 },
    { arbitrary: multiples(Math.max(kLo, simplest - 1000), Math.min(kHi, simplest + 1000)), weight: 4 },
    { arbitrary: multiples(kLo, kHi), weight: 2 },
  ];
  const near = numberHints(hints, boundsOf(s), true);
  if (near.length > 0) arbs.push({ arbitrary: fc.constantFrom(...near), weight: 2 });
  return fc.oneof(CROSS, ...arbs).map(noNegativeZero);
}

function numberArbitrary(s: Schema, hints: ValueHints): fc.Arbitrary<JsonValue> {
  const b = boundsOf(s);
  const r = integerRange(s);
  const simplest = within(b, 0) ? 0 : r !== null ? simplestInteger(r) : b.lo + (b.hi - b.lo) / 2;
  const double = fc.double({
    min: b.lo,
    max: b.hi,
    minExcluded: b.loOpen,
    maxExcluded: b.hiOpen,
    noNaN: true,
    noDefaultInfinity: true,
  });
  const arbs: fc.WeightedArbitrary<number>[] = [
    { arbitrary: fc.constant(simplest), weight: 1 },
    { arbitrary: integerArbitrary(s, hints) as fc.Arbitrary<number>, weight: 4 },
    { arbitrary: multiplesOf(0.01, b), weight: 2 }, // decimals with two places, as amounts are written
    { arbitrary: double, weight: 2 },
  ];
  // A fractional multipleOf: its multiples (those ajv's division check accepts pass).
  const step = num(s.multipleOf);
  if (step !== undefined && step > 0 && !Number.isInteger(step))
    arbs.push({ arbitrary: multiplesOf(step, b), weight: 4 });
  const near = numberHints(hints, b, false);
  if (near.length > 0) arbs.push({ arbitrary: fc.constantFrom(...near), weight: 2 });
  return fc.oneof(CROSS, ...arbs).map(noNegativeZero);
}

/** k × step for integers k (at most a million either side of zero) inside the bounds. */
function multiplesOf(step: number, b: Bounds): fc.Arbitrary<number> {
  let kLo = Math.max(-1_000_000, Math.ceil(b.lo / step));
  let kHi = Math.min(1_000_000, Math.floor(b.hi / step));
  if (b.loOpen && kLo * step <= b.lo) kLo++;
  if (b.hiOpen && kHi * step >= b.hi) kHi--;
  // Divided by the inverse where it is whole: 29 / 100 is the double written 0.29, 29 × 0.01 is not.
  const inverse = 1 / step;
  const times = Number.isInteger(inverse) ? (k: number) => k / inverse : (k: number) => k * step;
  return (kLo <= kHi ? fc.integer({ min: kLo, max: kHi }) : fc.constant(kLo)).map(times);
}

function noNegativeZero(n: number): number {
  return Object.is(n, -0) ? 0 : n;
}

// Formats ajv-formats checks (src/policy/ajv.ts); others get ordinary strings.
const FORMATS: Readonly<Record<string, () => fc.Arbitrary<string>>> = {
  email: () => fc.emailAddress(),
  uri: () => fc.webUrl(),
  url: () => fc.webUrl(),
  uuid: () => fc.uuid(),
  ipv4: () => fc.ipV4(),
  ipv6: () => fc.ipV6(),
  hostname: () => fc.domain(),
  'date-time': () => isoDate().map((d) => d.toISOString()),
  date: () => isoDate().map((d) => d.toISOString().slice(0, 10)),
  time: () => isoDate().map((d) => d.toISOString().slice(11)),
};

function isoDate(): fc.Arbitrary<Date> {
  return fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2099-12-31T23:59:59Z'), noInvalidDate: true });
}

function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

function stringArbitrary(s: Schema, hints: ValueHints, at?: string): fc.Arbitrary<JsonValue> {
  const minLength = Math.max(0, Math.floor(num(s.minLength) ?? 0));
  const maxLength = Math.max(minLength, Math.floor(num(s.maxLength) ?? minLength + 16));
  let pattern: RegExp | null = null;
  if (typeof s.pattern === 'string') {
    try {
      pattern = new RegExp(s.pattern, 'u'); // as ajv reads it
    } catch {
      pattern = null;
    }
  }
  const fits = (t: string): boolean =>
    codePoints(t) >= minLength && codePoints(t) <= maxLength && (pattern === null || pattern.test(t));
  const format = typeof s.format === 'string' ? s.format : undefined;
  let main: fc.Arbitrary<string>;
  if (format !== undefined && Object.hasOwn(FORMATS, format)) main = FORMATS[format]!();
  else if (pattern) main = matching(pattern, minLength, maxLength) ?? fc.string({ minLength, maxLength });
  else
    main = fc.oneof(
      CROSS,
      { arbitrary: fc.string({ minLength, maxLength }), weight: 4 },
      // Any script; a schema counts code points (as ajv does), fast-check here graphemes.
      {
        arbitrary: fc
          .string({ minLength, maxLength, unit: 'grapheme' })
          .map((t) => [...t].slice(0, maxLength).join('')),
        weight: 1,
      },
    );
  // A format's strings are its own; other strings are sometimes the policies' literals or PII.
  const samples = format === undefined ? [...new Set([...hints.strings, ...PII_SAMPLES])].filter(fits) : [];
  const arbs: fc.WeightedArbitrary<string>[] = [{ arbitrary: main, weight: 3 }];
  if (samples.length > 0) arbs.push({ arbitrary: fc.constantFrom(...samples), weight: 1 });
  // Strings that reach what the conditions test at this path, mostly: without them a property over
  // `argv(command) startswith [...]` is never tried on a command that starts so.
  // They are held to the schema's own bounds, not to the short strings generated otherwise.
  const schemaMax = num(s.maxLength) ?? Number.POSITIVE_INFINITY;
  const allowed = (t: string): boolean =>
    codePoints(t) >= minLength && codePoints(t) <= schemaMax && (pattern === null || pattern.test(t));
  const targeted = at === undefined || format !== undefined ? undefined : hints.at?.get(at);
  if (targeted !== undefined && fc.sample(targeted, { seed: 0, numRuns: 20 }).filter(allowed).length >= 5) {
    arbs.push({ arbitrary: targeted.filter(allowed), weight: 6 });
  }
  return arbs.length === 1 ? main : fc.oneof(CROSS, ...arbs);
}

/**
 * Strings the pattern matches, when fast-check can write them (no lookaround, no backreference).
 * stringMatching knows no minimum length: those too short are dropped when that leaves enough (tried
 * on a fixed sample first, so a pattern that can hardly be long enough never loops).
 */
function matching(pattern: RegExp, minLength: number, maxLength: number): fc.Arbitrary<string> | null {
  let arb: fc.Arbitrary<string>;
  try {
    arb = fc.stringMatching(pattern, { maxLength });
    if (minLength === 0) return arb;
    const long = (t: string): boolean => codePoints(t) >= minLength;
    return fc.sample(arb, { seed: 0, numRuns: 20 }).filter(long).length >= 5 ? arb.filter(long) : arb;
  } catch {
    return null;
  }
}

function arrayArbitrary(s: Schema, ctx: Context, depth: number, at: string | undefined): fc.Arbitrary<JsonValue> {
  const prefix = Array.isArray(s.prefixItems)
    ? s.prefixItems.map((p, i) => fromSchema(p, ctx, depth + 1, member(at, String(i))))
    : [];
  const minItems = Math.max(0, Math.floor(num(s.minItems) ?? 0));
  const maxItems = Math.max(minItems, Math.floor(num(s.maxItems) ?? minItems + MAX_EXTRA_ITEMS));
  const extra = depth >= SHALLOW_DEPTH ? 0 : MAX_EXTRA_ITEMS;
  const restMax = s.items === false ? 0 : Math.max(0, Math.min(maxItems, minItems + extra) - prefix.length);
  const restMin = Math.min(restMax, Math.max(0, minItems - prefix.length));
  const item = fromSchema(s.items === undefined ? true : s.items, ctx, depth + 1);
  const rest =
    s.uniqueItems === true
      ? fc.uniqueArray(item, { minLength: restMin, maxLength: restMax, selector: (v) => JSON.stringify(v) })
      : fc.array(item, { minLength: restMin, maxLength: restMax });
  if (prefix.length === 0) return rest;
  return fc.tuple(fc.tuple(...prefix), rest).map(([p, r]) => [...p, ...r]);
}

/** The path of a member of the value at `at`. */
function member(at: string | undefined, key: string): string | undefined {
  return at === undefined ? undefined : at === '' ? key : `${at}.${key}`;
}

function objectArbitrary(s: Schema, ctx: Context, depth: number, at: string | undefined): fc.Arbitrary<JsonValue> {
  const properties = isSchema(s.properties) ? s.properties : {};
  const required = new Set(
    Array.isArray(s.required) ? s.required.filter((k): k is string => typeof k === 'string') : [],
  );
  const declared = Object.keys(properties);
  const extraSchema = s.additionalProperties === undefined ? true : s.additionalProperties;
  // Every declared property, present or (unless required) not; required ones the schema does not
  // declare take the additional-properties schema.
  const shallow = depth >= SHALLOW_DEPTH;
  const members = [...new Set([...declared, ...required])]
    .filter((key) => !shallow || required.has(key))
    .map((key) => {
      const sub = Object.hasOwn(properties, key) ? properties[key] : extraSchema;
      const entry = fc.tuple(fc.constant(key), fromSchema(sub, ctx, depth + 1, member(at, key)));
      return required.has(key) ? entry : fc.option(entry, { nil: undefined });
    });
  const fixed = fc.tuple(...members).map((m) => m.filter((e) => e !== undefined));
  if (extraSchema === false || shallow) return fixed.map(toObject);
  const known = new Set([...declared, ...required]);
  const extraKey = fc.string({ maxLength: 8 }).filter((k) => !known.has(k));
  const extras = fc.uniqueArray(fc.tuple(extraKey, fromSchema(extraSchema, ctx, depth + 1)), {
    maxLength: MAX_EXTRA_KEYS,
    selector: ([k]) => k,
  });
  return fc.tuple(fixed, extras).map(([f, e]) => toObject([...f, ...e]));
}
