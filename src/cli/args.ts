// How every command reads its arguments, the same way for all of them (as opa, cerbos and vault do):
// `--help` or `-h` anywhere before `--` prints the command's usage on stdout and exits 0, whatever
// else is given; an unknown option, an option without its value, a missing or an extra argument
// prints the usage and what is wrong on stderr and exits 2, before the command does anything.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { EXIT, type Io } from './io.js';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface CommandSpec<O extends Options> {
  /** As typed after `gatehouse`. */
  readonly name: string;
  /** The whole help text, starting with its `usage:` line. */
  readonly usage: string;
  readonly options: O;
  /** How many positional arguments it takes, and what to call a missing one. */
  readonly positionals: { readonly min: number; readonly max: number; readonly name?: string };
}

/** A command's spec, its option types kept exact (so `values.tool` is a string, `values.role` a list). */
export function defineCommand<const O extends Options>(spec: CommandSpec<O>): CommandSpec<O> {
  return spec;
}

export type Parsed<O extends Options> = ReturnType<typeof parseArgs<{ options: O; allowPositionals: true }>>;

/** True when the arguments ask for help: `--help` or `-h` before a `--`. */
export function asksForHelp(argv: readonly string[]): boolean {
  for (const arg of argv) {
    if (arg === '--') return false;
    if (arg === '--help' || arg === '-h') return true;
  }
  return false;
}

/**
 * Prints the usage, then what was wrong (last, so it stays in view), on stderr, as
 * `gatehouse COMMAND: problem` (or `gatehouse: problem` without a command); returns exit code 2.
 */
export function usageError(io: Io, command: string | null, problem: string, usage: string): number {
  io.err(`${usage}\ngatehouse${command === null ? '' : ` ${command}`}: ${problem}\n`);
  return EXIT.invalid;
}

/** The parsed arguments, or the exit code after printing the help (0) or a usage error (2). */
export function parseCommand<const O extends Options>(
  argv: string[],
  spec: CommandSpec<O>,
  io: Io,
): Parsed<O> | number {
  if (asksForHelp(argv)) {
    io.out(spec.usage);
    return EXIT.ok;
  }
  let parsed: Parsed<O>;
  try {
    parsed = parseArgs({ args: argv, options: spec.options, allowPositionals: true, strict: true });
  } catch (err) {
    // parseArgs' own refusals (ERR_PARSE_ARGS_*) are the caller's typo; anything else is a bug.
    if (!isParseArgsError(err)) throw err;
    // Node's advice on positionals that start with '-' does not help a mistyped option.
    return usageError(io, spec.name, lowerFirst(err.message.split('. To specify a positional')[0]!), spec.usage);
  }
  const { min, max } = spec.positionals;
  const n = parsed.positionals.length;
  if (n < min) return usageError(io, spec.name, `missing ${spec.positionals.name ?? 'argument'}`, spec.usage);
  if (n > max) return usageError(io, spec.name, `unexpected argument '${parsed.positionals[max]}'`, spec.usage);
  return parsed;
}

/** A whole number of seconds in [min, max], the default when not given; undefined when invalid. */
export function seconds(text: string | undefined, fallback: number, min: number, max: number): number | undefined {
  if (text === undefined) return fallback;
  if (!/^\d{1,6}$/.test(text)) return undefined;
  const n = Number(text);
  return n >= min && n <= max ? n : undefined;
}

function isParseArgsError(err: unknown): err is Error {
  return (
    err instanceof TypeError &&
    typeof (err as NodeJS.ErrnoException).code === 'string' &&
    (err as NodeJS.ErrnoException).code!.startsWith('ERR_PARSE_ARGS_')
  );
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}
