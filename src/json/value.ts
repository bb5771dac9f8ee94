// The JSON value model shared by the parser, the canonicalizer and their callers.

export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

/** A plain object (prototype Object.prototype or null): not an array, not null, not a class instance. */
export function isJsonObject(v: unknown): v is JsonObject {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

// Numbers keep the text they were written with, because the canonical form hashes numbers as written
// (docs/spec.md section 4: "1.0" stays "1.0", big integers stay exact). The lexeme lives beside the value,
// keyed by the container that holds the number and the member key (array index as decimal string),
// so values stay plain JS numbers. Only lexemes that differ from String(n) are stored.
const lexemes = new WeakMap<object, Map<string, string>>();

/** The recorded lexeme of the number at container[key], if it differs from String(number). */
export function numberLexeme(container: object, key: string | number): string | undefined {
  return lexemes.get(container)?.get(String(key));
}

/** All recorded lexemes of one container (one WeakMap lookup per container for the canonicalizer). */
export function numberLexemes(container: object): ReadonlyMap<string, string> | undefined {
  return lexemes.get(container);
}

// RFC 8259 number grammar: a lexeme is emitted verbatim into canonical text, so it must be one.
const NUMBER_LEXEME = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/** Is `text` a number as JSON writes one (RFC 8259)? */
export function isNumberLexeme(text: string): boolean {
  return NUMBER_LEXEME.test(text);
}

export function setNumberLexeme(container: object, key: string | number, lexeme: string): void {
  if (!isNumberLexeme(lexeme)) throw new TypeError('not a JSON number lexeme');
  let map = lexemes.get(container);
  if (map === undefined) {
    map = new Map();
    lexemes.set(container, map);
  }
  map.set(String(key), lexeme);
}

/**
 * obj[key] = value, except that "__proto__" becomes an own data property: plain assignment would call
 * the inherited __proto__ setter and change the object's prototype.
 */
export function setOwn(obj: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}

/**
 * Copies from[fromKey] into to[toKey] with its number lexeme, if any. Use it when building a new
 * object from parsed values (e.g. an approval capability) so numbers still hash as written.
 */
export function copyMember(
  from: JsonObject | JsonValue[],
  fromKey: string | number,
  to: JsonObject,
  toKey: string,
): void {
  // Own members only: an inherited name such as "toString" is not a member of parsed JSON.
  if (!Object.hasOwn(from, fromKey)) return;
  const value = Array.isArray(from) ? from[Number(fromKey)] : from[String(fromKey)];
  if (value === undefined) return;
  setOwn(to, toKey, value);
  const lexeme = numberLexeme(from, fromKey);
  if (lexeme !== undefined) setNumberLexeme(to, toKey, lexeme);
}

/**
 * Copies every own member of `from` into `to`, with their number lexemes: a spread or
 * Object.assign copies the values but not the lexemes, so a number such as 1000000000000000000000
 * would then be written as the double's 1e+21.
 */
export function assignMembers(to: JsonObject, from: JsonObject): JsonObject {
  for (const key of Object.keys(from)) copyMember(from, key, to, key);
  return to;
}
