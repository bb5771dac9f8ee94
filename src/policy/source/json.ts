// JSON policy files, by the strict parser of request bodies (positions kept for errors).
import { JsonParseError, parseJsonWithPositions } from '../../json/parse.js';
import { jsonPointer, pointerSegments } from '../../json/pointer.js';
import { MAX_DEPTH, START, type KeyPath, type Location, type Parsed } from './common.js';

export function readJson(file: string, text: string): Parsed {
  try {
    const { value, values, keys } = parseJsonWithPositions(text, { maxDepth: MAX_DEPTH });
    const locate = (path: KeyPath, atKey = false): Location => {
      for (let n = path.length; n >= 0; n--) {
        const pointer = jsonPointer(path.slice(0, n));
        const at = (atKey && n === path.length ? keys.get(pointer) : undefined) ?? values.get(pointer);
        if (at) return at;
      }
      return START;
    };
    return { raw: { value, locate }, problems: [] };
  } catch (err) {
    if (!(err instanceof JsonParseError)) throw err;
    const at = offsetToLocation(text, err.offset);
    const message = err.code === 'too_deep' ? `nesting deeper than ${MAX_DEPTH}` : err.message;
    return { problems: [{ file, ...at, key: pointerSegments(err.pointer).join('.'), message }] };
  }
}

function offsetToLocation(text: string, byteOffset: number): Location {
  // The parser reports UTF-8 byte offsets; count lines over the same bytes.
  const bytes = new TextEncoder().encode(text).subarray(0, byteOffset);
  const before = new TextDecoder().decode(bytes);
  const lastNl = before.lastIndexOf('\n');
  return { line: before.split('\n').length, column: before.length - lastNl };
}
