// Argument paths (`order`, `order.total`, `items.0.sku`): how conditions and approval shapes name
// a value inside the tool's arguments. Reads own properties only, so inherited members
// (`constructor`, `__proto__`, `toString`) are never seen.
import { copyMember, type JsonObject, type JsonValue } from '../json/value.js';

const SECRET_WORDS = ['password', 'secret', 'token', 'apikey', 'privatekey', 'credential'];

/**
 * A path segment that looks like a secret is refused wherever a policy reads arguments (docs/spec.md
 * section 3). Containment, not equality, after removing `-` and `_`: `access_token`,
 * `clientSecret` and `credentials` are secrets too. Over-refusing is the fail-closed side.
 */
export function looksSecret(segment: string): boolean {
  const norm = segment.toLowerCase().replace(/[-_]/g, '');
  return SECRET_WORDS.some((w) => norm.includes(w));
}

const SEGMENT = /^(?:[A-Za-z_][A-Za-z0-9_]*|0|[1-9][0-9]{0,8})$/;

/** Split and check a dotted path; returns an error message (never a value) when it is not one. */
export function parseArgPath(text: string): { segments: string[] } | { error: string } {
  const segments = text.split('.');
  if (!SEGMENT.test(segments[0] ?? '') || /^[0-9]/.test(segments[0] ?? '')) {
    return { error: 'a path starts with a name (letters, digits, _)' };
  }
  for (const s of segments) {
    if (!SEGMENT.test(s)) return { error: 'path segments are names or array indexes joined by dots' };
    if (looksSecret(s)) return { error: `path segment "${s}" looks like a secret and cannot be read by a policy` };
  }
  return { segments };
}

/** The value at a path, reading own properties and in-range array indexes only. */
export function readPath(
  args: JsonObject,
  segments: readonly string[],
): { found: false } | { found: true; value: JsonValue; parent: JsonObject | JsonValue[]; key: string } {
  let parent: JsonValue = args;
  let value: JsonValue = args;
  let key = '';
  for (const s of segments) {
    if (Array.isArray(value)) {
      const i = Number(s);
      if (!/^(?:0|[1-9][0-9]*)$/.test(s) || i >= value.length) return { found: false };
      parent = value;
      value = value[i] as JsonValue;
    } else if (value !== null && typeof value === 'object' && Object.hasOwn(value, s)) {
      parent = value;
      value = value[s] as JsonValue;
    } else {
      return { found: false };
    }
    key = s;
  }
  return { found: true, value, parent: parent as JsonObject | JsonValue[], key };
}

/**
 * Copy the named paths into a new object keyed by the path text (docs/spec.md section 2: approval
 * capability and presentation). A missing path is absent; number lexemes travel with the value.
 */
export function pickPaths(
  args: JsonObject,
  paths: readonly { text: string; segments: readonly string[] }[],
): JsonObject {
  const out: JsonObject = {};
  for (const p of paths) {
    const hit = readPath(args, p.segments);
    if (hit.found) copyMember(hit.parent, hit.key, out, p.text);
  }
  return out;
}
