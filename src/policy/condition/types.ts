// The JSON types a condition's operand can hold, as a bit set: what a literal, a built-in or a root
// is known to give, what an operator can decide with, and what a tool's schema declares. A use whose
// operand can never have a type its operator decides with is a load error.

export const STRING = 1;
export const NUMBER = 2;
export const BOOLEAN = 4;
export const NULL = 8;
export const ARRAY = 16;
export const OBJECT = 32;
/** Unknown: any JSON value. */
export const ANY = 63;

const NAMES: readonly [number, string][] = [
  [STRING, 'a string'],
  [NUMBER, 'a number'],
  [BOOLEAN, 'a boolean'],
  [NULL, 'null'],
  [ARRAY, 'a list'],
  [OBJECT, 'an object'],
];

/** "a string", "a string or a list". */
export function typeName(types: number): string {
  const names = NAMES.filter(([bit]) => (types & bit) !== 0).map(([, name]) => name);
  return names.length <= 1 ? (names[0] ?? 'nothing') : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
}

/** The type of a literal value. */
export function typeOfValue(v: unknown): number {
  if (v === null) return NULL;
  if (Array.isArray(v)) return ARRAY;
  switch (typeof v) {
    case 'string':
      return STRING;
    case 'number':
      return NUMBER;
    case 'boolean':
      return BOOLEAN;
    case 'object':
      return OBJECT;
    default:
      return ANY;
  }
}

/** The types a JSON Schema `type` keyword names (`integer` is a number); ANY when it names none. */
export function typeOfSchema(type: unknown): number {
  const names = typeof type === 'string' ? [type] : Array.isArray(type) ? type : [];
  let bits = 0;
  for (const n of names) {
    if (n === 'string') bits |= STRING;
    else if (n === 'number' || n === 'integer') bits |= NUMBER;
    else if (n === 'boolean') bits |= BOOLEAN;
    else if (n === 'null') bits |= NULL;
    else if (n === 'array') bits |= ARRAY;
    else if (n === 'object') bits |= OBJECT;
  }
  return bits === 0 ? ANY : bits;
}
