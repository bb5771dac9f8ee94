// Durations: one grammar for the settings (src/config.ts), the policy files (a window's `per`) and the
// CLI. A positive whole number with an optional unit, `ms`, `s`, `m`, `h` or `d`; a bare number is
// seconds, as a JWT's `exp` and a policy's `per: 60` are (docs/configuration.md "Formats"). Pure: the
// policy core and the configuration both read it.

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^([0-9]{1,15})(ms|s|m|h|d)?$/;

/** The grammar in words, for messages. */
export const DURATION_FORMAT =
  'a whole number with a unit, ms, s, m, h or d (like 500ms, 30s, 5m, 1h, 7d); a bare number is seconds';

/**
 * A duration in milliseconds, or null when `value` is not one (zero, negative, fractional, an
 * unknown unit, beyond 2^53 ms). A JSON number (a policy's `per: 60`) is seconds, like bare digits.
 */
export function parseDuration(value: string | number): number | null {
  let ms: number;
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) return null;
    ms = value * UNIT_MS.s;
  } else {
    const m = DURATION.exec(value.trim());
    if (m === null) return null;
    ms = Number(m[1]) * UNIT_MS[(m[2] ?? 's') as keyof typeof UNIT_MS];
  }
  return Number.isSafeInteger(ms) && ms > 0 ? ms : null;
}

/** Whether `text` is digits alone: read as seconds, which a refusal points out (a value meant as milliseconds reads 1000 times longer). */
export function isBareNumber(text: string): boolean {
  return /^[0-9]+$/.test(text.trim());
}
