// A copy of a JSON value whose numbers are written as a JavaScript client writes them (String(n))
// wherever that is the same number exactly: 450.50 becomes 450.5, 1e3 becomes 1000. A number no
// double holds exactly (9007199254740993, 0.10000000000000000001) keeps the text it was written with:
// rewriting it would change the value. Used where the server hands arguments to a client that will
// send them back with JSON.stringify and must hash the same (docs/spec.md section 5.4, "Amend and grant").
import { compareDecimals, decimalOf } from './decimal.js';
import { isJsonObject, type JsonObject, type JsonValue, numberLexeme, setNumberLexeme, setOwn } from './value.js';

export function plainNumbers<T extends JsonValue>(value: T): T {
  return copy(value) as T;
}

function copy(value: JsonValue): JsonValue {
  if (Array.isArray(value)) {
    const out: JsonValue[] = [];
    value.forEach((item, i) => {
      out.push(copy(item));
      keepLexeme(value, out, i, item);
    });
    return out;
  }
  if (isJsonObject(value)) {
    const out: JsonObject = {};
    for (const [key, item] of Object.entries(value)) {
      setOwn(out, key, copy(item));
      keepLexeme(value, out, key, item);
    }
    return out;
  }
  return value;
}

/** Carries the lexeme of from[key] over to to[key] when String(n) would be another number. */
function keepLexeme(from: object, to: object, key: string | number, item: JsonValue): void {
  if (typeof item !== 'number') return;
  const lexeme = numberLexeme(from, key);
  if (lexeme === undefined) return;
  const written = decimalOf(lexeme);
  const plain = decimalOf(String(item));
  if (written !== null && plain !== null && compareDecimals(written, plain) === 0) return;
  setNumberLexeme(to, key, lexeme);
}
