// Replay: recorded decisions decided again under a candidate policy set and under a baseline, and
// what flips between the two (docs/policy-changes.md). Pure: decide() is a function of the set, the
// request and the caller, so a record with its arguments is decided exactly as the service would.
// The baseline is either a policy set (`--baseline DIR`) or, without one, the recorded answer itself,
// which is what the set that decided (named by its digests on the record) answered.
import { decide } from './decide.js';
import type { Decision, PolicySet } from './model.js';
import { type DecisionRecord, recordRequest } from './record.js';

/** Example decision ids kept per row. */
export const EXAMPLES = 3;

export interface ReplaySets {
  /** The candidate set for an environment (may throw PolicyLoadError). */
  candidate(env: string | null): PolicySet;
  /** The baseline set for an environment; null: the recorded answers are the baseline. */
  baseline: ((env: string | null) => PolicySet) | null;
  /** The environment of a record that names none (a line from before the log recorded it). */
  defaultEnv: string | null;
}

export interface Flip {
  from: Decision;
  to: Decision;
  /** The rule that decided under the baseline, and under the candidate. */
  baselineRule: string;
  candidateRule: string;
  count: number;
  examples: string[];
}

export interface Examples {
  count: number;
  examples: string[];
}

export interface ReplayReport {
  /** Decision records read. */
  records: number;
  /** Decided under both and compared. */
  compared: number;
  /** Recorded without arguments (LOG_ARGS off): never guessed. */
  notReplayable: Examples;
  /** Redeems of an approval (`approval_id`): their answer was the redeem's; compared only against a baseline set. */
  redeems: Examples;
  /** Idempotency-Key retries: an earlier decision's answer sent again, skipped. */
  repeats: number;
  /** POST /inspect's records (a result or model content, never kept): not calls, skipped. */
  inspections: number;
  /** Compared, but the recorded digests are not the baseline's: another set decided them. */
  otherSet: Examples & { digests: string[][] };
  /** Decided by the baseline's digests, yet the baseline answers otherwise than the record (redacted arguments, say). */
  notReproduced: Examples;
  /** Decisions that differ, one row per (from, to, baseline rule, candidate rule), most frequent first. */
  flips: Flip[];
}

export function replay(records: Iterable<DecisionRecord>, sets: ReplaySets): ReplayReport {
  const report: ReplayReport = {
    records: 0,
    compared: 0,
    notReplayable: { count: 0, examples: [] },
    redeems: { count: 0, examples: [] },
    repeats: 0,
    inspections: 0,
    otherSet: { count: 0, examples: [], digests: [] },
    notReproduced: { count: 0, examples: [] },
    flips: [],
  };
  const flips = new Map<string, Flip>();
  const otherDigests = new Set<string>();
  for (const record of records) {
    report.records++;
    if (record.repeated) {
      report.repeats++;
      continue;
    }
    if (record.stage !== undefined) {
      report.inspections++;
      continue;
    }
    const args = record.args;
    if (args === undefined) {
      note(report.notReplayable, record.id);
      continue;
    }
    const env = record.env === undefined ? sets.defaultEnv : record.env;
    const request = recordRequest({ ...record, args });
    let before: { decision: Decision; rule: string };
    if (sets.baseline === null) {
      if (record.approvalId !== undefined) {
        note(report.redeems, record.id);
        continue;
      }
      before = { decision: record.decision, rule: record.rule };
    } else {
      const baseline = sets.baseline(env);
      const got = decide(baseline, request, record.identity);
      before = { decision: got.decision, rule: got.rule };
      if (!sameDigests(record.digests, baseline.digests)) {
        note(report.otherSet, record.id);
        const key = record.digests.join(',');
        if (!otherDigests.has(key)) {
          otherDigests.add(key);
          report.otherSet.digests.push([...record.digests]);
        }
      } else if (record.approvalId !== undefined) {
        note(report.redeems, record.id); // compared against the baseline set; the record is the redeem's answer
      } else if (got.decision !== record.decision || got.rule !== record.rule) {
        note(report.notReproduced, record.id);
      }
    }
    const after = decide(sets.candidate(env), request, record.identity);
    report.compared++;
    if (after.decision === before.decision) continue;
    const key = JSON.stringify([before.decision, after.decision, before.rule, after.rule]);
    let flip = flips.get(key);
    if (flip === undefined) {
      flip = {
        from: before.decision,
        to: after.decision,
        baselineRule: before.rule,
        candidateRule: after.rule,
        count: 0,
        examples: [],
      };
      flips.set(key, flip);
    }
    flip.count++;
    if (flip.examples.length < EXAMPLES) flip.examples.push(record.id);
  }
  report.flips = [...flips.values()].sort(
    (a, b) =>
      b.count - a.count ||
      a.from.localeCompare(b.from) ||
      a.to.localeCompare(b.to) ||
      a.baselineRule.localeCompare(b.baselineRule) ||
      a.candidateRule.localeCompare(b.candidateRule),
  );
  return report;
}

/** How many decisions flipped in all. */
export function flipCount(report: ReplayReport): number {
  return report.flips.reduce((n, f) => n + f.count, 0);
}

function note(into: Examples, id: string): void {
  into.count++;
  if (into.examples.length < EXAMPLES) into.examples.push(id);
}

function sameDigests(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}
