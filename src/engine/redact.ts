// Argument values are not logged unless LOG_ARGS=true, and then secrets are redacted at any depth
// (docs/operations.md "Logs"): by name, a secret-named key's whole value (`"[redacted]"`); by value,
// each credential found inside a string (src/policy/secrets.ts), replaced by `[redacted:KIND]` and
// the rest of the string kept; and a `{name, value}` pair whose name is secret-like (HTTP headers
// as a list, a container's environment), its whole value.
import { setOwn, type JsonObject, type JsonValue } from '../json/value.js';
import { isSecretName, redactCredentials } from '../policy/secrets.js';

const REDACTED = '[redacted]';

/** The members that name a pair's value (`[{"name": "Authorization", "value": "…"}]`, `{"key": "DB_PASSWORD", "value": "…"}`). */
const PAIR_NAMES = ['name', 'Name', 'key', 'Key'];
const PAIR_VALUES = ['value', 'Value'];

export function redactSecrets(value: JsonValue, depth = 0): JsonValue {
  if (depth > 64) return '[too deep]';
  if (typeof value === 'string') return redactCredentials(value);
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v, depth + 1));
  if (value === null || typeof value !== 'object') return value;
  const secretPair = PAIR_NAMES.some(
    (k) => Object.hasOwn(value, k) && typeof value[k] === 'string' && isSecretName(value[k]),
  );
  const out: JsonObject = {};
  for (const key of Object.keys(value)) {
    const hidden = isSecretName(key) || (secretPair && PAIR_VALUES.includes(key));
    setOwn(out, key, hidden ? REDACTED : redactSecrets(value[key] as JsonValue, depth + 1));
  }
  return out;
}
