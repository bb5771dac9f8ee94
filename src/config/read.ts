// Reading environment variables one at a time: each reader checks its value, adds a problem to the
// shared list (naming the variable, never echoing a secret) and answers the default instead, so
// that every problem of a configuration is reported at once (src/config.ts).
import { DURATION_FORMAT, isBareNumber, parseDuration } from '../policy/duration.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** The bounds of a duration setting, each a duration. */
export interface DurationRange {
  readonly min: string;
  readonly max: string;
}

export interface Reader {
  readonly env: Env;
  readonly problems: string[];
  /** The value, or `fallback` when unset or empty. */
  str(name: string, fallback?: string | null): string | null;
  int(name: string, fallback: number, min: number, max: number, unit?: 'milliseconds' | 'seconds'): number;
  /** Milliseconds. */
  duration(
    name: string,
    fallback: string,
    range: DurationRange,
    options?: { allowZero?: boolean; wholeSeconds?: boolean },
  ): number;
  /** Whole seconds. */
  seconds(name: string, fallback: string, range: DurationRange, options?: { allowZero?: boolean }): number;
  bool(name: string): boolean;
}

export function createReader(env: Env, problems: string[]): Reader {
  const str = (name: string, fallback: string | null = null): string | null => {
    const v = env[name];
    return v === undefined || v === '' ? fallback : v;
  };
  // `unit`: a setting whose name gives its unit (DB_DEADLINE_MS, FAST_GRANT_SECONDS) takes digits
  // alone, in that unit, whatever durations elsewhere read.
  const int = (name: string, fallback: number, min: number, max: number, unit?: 'milliseconds' | 'seconds'): number => {
    const raw = str(name);
    if (raw === null) return fallback;
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || n < min || n > max) {
      problems.push(
        unit === undefined
          ? `${name} must be an integer from ${min} to ${max}`
          : `${name} must be a number of ${unit} from ${min} to ${max}, digits only (its name gives the unit)`,
      );
      return fallback;
    }
    return n;
  };
  // Every duration is bounded: a timer beyond 2^31-1 ms fires after 1 ms in Node's setTimeout, so no
  // timeout may get there, and a bound refuses most values written in milliseconds where a bare
  // number is seconds. `allowZero` lets "0" mean "off"; `wholeSeconds` is for settings kept in
  // seconds (JWT times).
  const duration = (
    name: string,
    fallback: string,
    range: DurationRange,
    options: { allowZero?: boolean; wholeSeconds?: boolean } = {},
  ): number => {
    const raw = str(name, fallback)!;
    if (options.allowZero === true && raw.trim() === '0') return 0;
    const ms = parseDuration(raw);
    if (ms === null || ms < parseDuration(range.min)! || ms > parseDuration(range.max)!) {
      const zero = options.allowZero === true ? ', or 0 (off)' : '';
      // Digits alone are echoed (a number is no secret): a value meant as milliseconds is then plain to see.
      const bare =
        ms !== null && isBareNumber(raw) ? ` (${raw.trim()} is read as seconds; ${raw.trim()}ms is milliseconds)` : '';
      problems.push(`${name} must be a duration from ${range.min} to ${range.max}${zero}: ${DURATION_FORMAT}${bare}`);
      return parseDuration(fallback)!;
    }
    if (options.wholeSeconds === true && ms % 1000 !== 0) {
      problems.push(`${name} must be a whole number of seconds (like 30s, 5m, 1h)`);
      return parseDuration(fallback)!;
    }
    return ms;
  };
  const seconds = (
    name: string,
    fallback: string,
    range: DurationRange,
    options: { allowZero?: boolean } = {},
  ): number => duration(name, fallback, range, { ...options, wholeSeconds: true }) / 1000;
  const bool = (name: string): boolean => {
    const raw = str(name, 'false');
    if (raw !== 'true' && raw !== 'false') problems.push(`${name} must be true or false`);
    return raw === 'true';
  };
  return { env, problems, str, int, duration, seconds, bool };
}

/**
 * A comma-separated list of roles (spaces around each are ignored); unset, `fallback` (deduplicated).
 * An empty entry is refused rather than skipped: `admin,` is more likely a mistake than a list of one.
 */
export function roleList(
  name: string,
  raw: string | null,
  fallback: readonly string[],
  problems: string[],
): readonly string[] {
  if (raw === null) return [...new Set(fallback)];
  const roles = raw.split(',').map((r) => r.trim());
  if (roles.some((r) => r === '')) {
    problems.push(`${name} must be a comma-separated list of role names, none of them empty`);
    return [...new Set(fallback)];
  }
  return [...new Set(roles)];
}
