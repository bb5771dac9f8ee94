// Content guards run on a tool's arguments (docs/spec.md section 2.5). The only guard is `pii`: it looks
// for payment card numbers, IBANs, emails and phone numbers (one detector each, in guards/) in every
// string value, every object key and every number (guards/walk.ts, one walk for all of a guard's
// detectors). A string holding anything outside ASCII is scanned a second time folded
// (guards/fold.ts), so look-alikes cannot hide a value.
//
// Every detector is a hand-written single pass (no RegExp, so no backtracking): each start position
// does bounded work and the scan resumes after the run it looked at, so a 100 KB adversarial string
// costs linear time.
//
// A new detector is a module in guards/ exporting a Detector (guards/detector.ts) and a line in its
// guard's list below; a new guard is a line in GUARDS.
import { card } from './guards/card.js';
import { detectIn } from './guards/detector.js';
import { email } from './guards/email.js';
import { iban } from './guards/iban.js';
import { phone } from './guards/phone.js';
import { createScan, type Finding } from './guards/walk.js';
import type { JsonObject } from '../json/value.js';

/** The pii guard's detectors, most specific first: a checksum beats a shape, the phone heuristic is the weakest. */
const PII = [card, iban, email, phone] as const;

/** Every guard by the name a policy file gives it, with its detectors. */
const GUARDS = { pii: PII } as const;

export type GuardName = keyof typeof GUARDS;
export const GUARD_NAMES: readonly GuardName[] = Object.freeze(Object.keys(GUARDS) as GuardName[]);

type DetectorOf<G extends GuardName> = (typeof GUARDS)[G][number];
export type PiiKind = DetectorOf<'pii'>['kind'];
/** What any guard can find. */
export type FindingKind = DetectorOf<GuardName>['kind'];
export type GuardFinding = Finding<FindingKind>;

// Set up once, at load: each guard's scan, and the text of each kind.
const SCANS = new Map<GuardName, (args: JsonObject) => GuardFinding | null>(
  GUARD_NAMES.map((name) => [name, createScan<FindingKind>(GUARDS[name])]),
);
const TEXTS = new Map<FindingKind, string>(
  GUARD_NAMES.flatMap((name) => GUARDS[name].map((d) => [d.kind, d.text] as const)),
);

export function runGuard(name: GuardName, args: JsonObject): GuardFinding | null {
  const scan = SCANS.get(name);
  // Unreachable: compile() refuses a guard name not in GUARD_NAMES. Thrown, never a silent pass.
  if (scan === undefined) throw new Error(`unknown guard "${name}"`);
  return scan(args);
}

/** How a decision's reason names a finding of this kind: "a card number". */
export function findingText(kind: FindingKind): string {
  return TEXTS.get(kind) ?? kind;
}

/** The pii guard's scan: the first finding in document order (see guards/walk.ts). */
export const scanPii: (args: JsonObject) => Finding<PiiKind> | null = createScan(PII);

/** The kind the pii guard finds in one text, as it is or folded; null for none. */
export const detectPii: (s: string) => PiiKind | null = detectIn(PII);
