// Content guards (docs/spec.md section 2.5): `pii` looks for payment card numbers, IBANs, emails and
// phone numbers (one detector each, in guards/); `secrets` for credentials in well-known formats
// (guards/secrets.ts); `pattern` for an author's RE2 patterns (guards/pattern.ts). Each reads every
// string value, every object key and every number (guards/walk.ts, one walk for all of a guard's
// detectors), of a call's arguments, a tool's result or a model's request or response (the guard's
// `on`). A string holding anything outside ASCII is scanned a second time folded (guards/fold.ts),
// so look-alikes cannot hide a value.
//
// Every pii detector is a hand-written single pass (no RegExp, so no backtracking); the credential
// formats are patterns that run in linear time on V8's engine (secrets.ts says why); author
// patterns run on RE2. A 1 MiB adversarial string costs linear time.
//
// A new pii detector is a module in guards/ exporting a Detector (guards/detector.ts) and a line in
// PII below; a new guard is a module exporting a TextDetector and a line in GUARDS.
import { card } from './guards/card.js';
import { detectIn, fromDetectors, type TextDetector } from './guards/detector.js';
import { email } from './guards/email.js';
import { iban } from './guards/iban.js';
import { phone } from './guards/phone.js';
import { secrets } from './guards/secrets.js';
import { createScan, type Finding } from './guards/walk.js';
import type { JsonObject, JsonValue } from '../json/value.js';

/** The pii guard's detectors, most specific first: a checksum beats a shape, the phone heuristic is the weakest. */
const PII = [card, iban, email, phone] as const;

/**
 * Every guard by the name a policy file gives it: its detector, or null for `pattern`, whose
 * detector each guard entry compiles from its own `patterns` (compile.ts).
 */
const GUARDS = { pii: fromDetectors(PII), secrets, pattern: null } as const;

export type GuardName = keyof typeof GUARDS;
export const GUARD_NAMES: readonly GuardName[] = Object.freeze(Object.keys(GUARDS) as GuardName[]);
/** The guards whose detector is fixed (not compiled from the entry). */
export type BuiltinGuard = Exclude<GuardName, 'pattern'>;

export type PiiKind = (typeof PII)[number]['kind'];
/** What any guard can find: a pii kind, a credential format, or a pattern's name. */
export type FindingKind = string;
export type GuardFinding = Finding<FindingKind>;

/** A guard's scan: the first finding in document order of any JSON value (see guards/walk.ts). */
export type GuardScan = (value: JsonValue, rootLexeme?: string) => GuardFinding | null;

/** One guard entry's detector and scan, compiled once. */
export interface GuardDetector {
  readonly detector: TextDetector;
  readonly scan: GuardScan;
}

// Set up once, at load: each fixed guard's scan, shared by every entry of that guard (so a request
// is scanned once per guard, however many files use it).
const BUILTIN = new Map<BuiltinGuard, GuardDetector>(
  (['pii', 'secrets'] as const).map((name) => {
    const detector = GUARDS[name] as TextDetector;
    return [name, { detector, scan: createScan(detector) }];
  }),
);

/** The detector of a fixed guard. */
export function builtinGuard(name: BuiltinGuard): GuardDetector {
  const g = BUILTIN.get(name);
  // Unreachable: compile() refuses a guard name not in GUARD_NAMES. Thrown, never a silent pass.
  if (g === undefined) throw new Error(`unknown guard "${name}"`);
  return g;
}

/** A pattern guard's detector and scan, from its compiled patterns. */
export function patternGuard(detector: TextDetector): GuardDetector {
  return { detector, scan: createScan(detector) };
}

export function runGuard(name: BuiltinGuard, args: JsonValue): GuardFinding | null {
  return builtinGuard(name).scan(args);
}

/** How a decision's reason names a finding of a fixed guard: "a card number". */
export function findingText(kind: FindingKind, detector: TextDetector = builtinGuard('pii').detector): string {
  return detector.text(kind);
}

/** The pii guard's scan: the first finding in document order (see guards/walk.ts). */
export const scanPii: (args: JsonObject) => Finding<PiiKind> | null = createScan(PII);

/** The kind the pii guard finds in one text, as it is or folded; null for none. */
export const detectPii: (s: string) => PiiKind | null = detectIn(PII);
