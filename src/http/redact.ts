// Argument values are not logged unless LOG_ARGS=true, and then secret-named keys are redacted at
// any depth (the same "looks like a secret" test conditions use).
import { setOwn, type JsonObject, type JsonValue } from '../json/value.js';
import { looksSecret } from '../policy/path.js';

export function redactSecrets(value: JsonValue, depth = 0): JsonValue {
  if (depth > 64) return '[too deep]';
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v, depth + 1));
  if (value === null || typeof value !== 'object') return value;
  const out: JsonObject = {};
  for (const key of Object.keys(value)) {
    setOwn(out, key, looksSecret(key) ? '[redacted]' : redactSecrets(value[key] as JsonValue, depth + 1));
  }
  return out;
}
