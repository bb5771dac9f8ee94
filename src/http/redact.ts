// Argument values are not logged unless LOG_ARGS=true, and then secret-named keys are redacted at
// any depth (the same "looks like a secret" test conditions use).
import { setOwn, type JsonObject, type JsonValue } from '../json/value.js';
import { looksSecret } from '../policy/path.js';

// Keys that carry credentials in HTTP-shaped arguments (`headers.Authorization`, `Cookie`) but are not
// on the condition language's list: redacted in logs too.
const LOG_SECRET_WORDS = ['authorization', 'cookie', 'passwd', 'passphrase'];

function isSecretKey(key: string): boolean {
  if (looksSecret(key)) return true;
  const norm = key.toLowerCase().replace(/[-_]/g, '');
  return LOG_SECRET_WORDS.some((w) => norm.includes(w));
}

export function redactSecrets(value: JsonValue, depth = 0): JsonValue {
  if (depth > 64) return '[too deep]';
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v, depth + 1));
  if (value === null || typeof value !== 'object') return value;
  const out: JsonObject = {};
  for (const key of Object.keys(value)) {
    setOwn(out, key, isSecretKey(key) ? '[redacted]' : redactSecrets(value[key] as JsonValue, depth + 1));
  }
  return out;
}
