// `gatehouse replay --policies DIR [--baseline DIR] --from FILE.jsonl [--env E] [--json] [--accept]`:
// the recorded decisions of a captured decision log decided again under a candidate policy set and
// a baseline (another directory, or by default the recorded answers), and one table of what flips.
// Exit 0 nothing flips (or --accept), 1 something flips or nothing could be decided again (unless
// --allow-empty), 2 bad options, files or policies.
import { PolicyLoadError, formatProblem } from '../policy/errors.js';
import { buildPolicySet, type FileBytes, readPolicyFiles } from '../policy/load.js';
import type { PolicySet } from '../policy/model.js';
import type { DecisionRecord } from '../policy/record.js';
import { type Examples, flipCount, type ReplayReport, replay } from '../policy/replay.js';
import { defineCommand, parseCommand, usageError } from './args.js';
import { envOf } from './caller.js';
import { allDecisions } from '../records/query.js';
import { readDecisionLog } from './decision-log.js';
import { dateOption, withDecisionStore } from './decision-store.js';
import { EXIT, type Io } from './io.js';
import { table } from './table.js';

export const REPLAY = defineCommand({
  name: 'replay',
  usage: `usage: gatehouse replay --policies DIR [--baseline DIR] --from FILE.jsonl|--from-db [--since T] [--until T]
                       [--env E] [--json] [--accept] [--allow-empty]

Decides every recorded decision of a captured decision log (JSON lines as the service writes them,
with LOG_ARGS=true), or of the decision store (DECISION_STORE=postgres, read from DATABASE_URL),
under the candidate policies of DIR and under the baseline, and prints one table of the decisions
that flip (allow → deny, deny → allow, allow → require_approval, ...) by rule, with counts and
example decision ids. Decisions recorded without arguments are counted as
not replayable, never guessed; when no decision at all could be decided again, replay fails rather
than report that nothing flips.

options:
  --policies DIR   the candidate policy set (a directory or one file)
  --baseline DIR   the set to compare with (default: the recorded answers, which are what the set
                   that decided answered); a decision recorded by other digests than the
                   baseline's is reported
  --from FILE      the decision log, JSON lines (- for stdin)
  --from-db        the decision store of DATABASE_URL instead of a log file
  --since T        with --from-db: decisions at or after T (RFC 3339, or a date: 2026-12-01)
  --until T        with --from-db: decisions before T
  --env E          the environment of a line that names none (default: POLICY_ENV)
  --json           the report as one JSON document, for CI
  --accept         exit 0 even when decisions flip
  --allow-empty    exit 0 even when no decision could be decided again (an empty log, or only lines
                   recorded without arguments)
  -h, --help       show this help

exit status: 0 nothing flips (or --accept); 1 a decision flips, or none was decided again (without
--allow-empty); 2 a problem in the arguments, the policies, the log file or the decision store
`,
  options: {
    policies: { type: 'string' },
    baseline: { type: 'string' },
    from: { type: 'string' },
    'from-db': { type: 'boolean' },
    since: { type: 'string' },
    until: { type: 'string' },
    env: { type: 'string' },
    json: { type: 'boolean' },
    accept: { type: 'boolean' },
    'allow-empty': { type: 'boolean' },
  },
  positionals: { min: 0, max: 0 },
});

export async function runReplay(argv: string[], io: Io): Promise<number> {
  const parsed = parseCommand(argv, REPLAY, io);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  if (values.policies === undefined) return usageError(io, 'replay', '--policies DIR is required', REPLAY.usage);
  const fromDb = values['from-db'] === true;
  if (values.from === undefined && !fromDb)
    return usageError(io, 'replay', '--from FILE or --from-db is required', REPLAY.usage);
  if (values.from !== undefined && fromDb)
    return usageError(io, 'replay', '--from and --from-db: give one', REPLAY.usage);
  if (!fromDb && (values.since !== undefined || values.until !== undefined)) {
    return usageError(io, 'replay', '--since and --until go with --from-db', REPLAY.usage);
  }
  const since = dateOption('since', values.since);
  const until = dateOption('until', values.until);
  if (typeof since === 'string') return usageError(io, 'replay', since, REPLAY.usage);
  if (typeof until === 'string') return usageError(io, 'replay', until, REPLAY.usage);
  const candidate = await policySource(values.policies, io);
  if (candidate === null) return EXIT.invalid;
  let baseline: ((env: string | null) => PolicySet) | null = null;
  if (values.baseline !== undefined) {
    baseline = await policySource(values.baseline, io);
    if (baseline === null) return EXIT.invalid;
  }
  let records: DecisionRecord[];
  let unreadable: { count: number; first: { line: number; problem: string } | null };
  if (values.from !== undefined) {
    try {
      ({ records, unreadable } = await readDecisionLog(values.from));
    } catch (err) {
      io.err(
        `gatehouse replay: cannot read ${values.from}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}\n`,
      );
      return EXIT.invalid;
    }
  } else {
    let read: DecisionRecord[] | null = null;
    const code = await withDecisionStore('replay', io, async (sql) => {
      read = await allDecisions(sql, since, until);
      return EXIT.ok;
    });
    if (read === null) return code;
    records = read;
    unreadable = { count: 0, first: null };
  }
  let report: ReplayReport;
  try {
    report = replay(records, { candidate, baseline, defaultEnv: envOf(values) });
  } catch (err) {
    if (!(err instanceof PolicyLoadError)) throw err;
    for (const p of err.problems) io.err(`${formatProblem(p)}\n`);
    return EXIT.invalid;
  }
  const flipped = flipCount(report);
  if (values.json) {
    io.out(
      `${JSON.stringify({ from: values.from ?? 'db', candidate: values.policies, baseline: values.baseline ?? null, unreadable, ...report, flipped }, null, 2)}\n`,
    );
  } else {
    io.out(textReport(report, { candidate: values.policies, baseline: values.baseline ?? null, unreadable }));
  }
  // "No decision flips" over nothing compared would pass a CI gate on a log that cannot show a flip.
  if (report.compared === 0 && values['allow-empty'] !== true) {
    io.err(
      `gatehouse replay: no decision was decided again: 0 of ${plural(report.records, 'recorded decision')}, ` +
        `${report.notReplayable.count} not replayable (recorded without arguments: LOG_ARGS=true records them); --allow-empty accepts this\n`,
    );
    return EXIT.failed;
  }
  return flipped > 0 && !values.accept ? EXIT.failed : EXIT.ok;
}

/** A directory's policy set per environment, read once and built on first use; null after reporting why not. */
async function policySource(target: string, io: Io): Promise<((env: string | null) => PolicySet) | null> {
  let files: FileBytes[];
  try {
    files = await readPolicyFiles(target);
  } catch (err) {
    if (!(err instanceof PolicyLoadError)) throw err;
    for (const p of err.problems) io.err(`${formatProblem(p)}\n`);
    return null;
  }
  const sets = new Map<string | null, PolicySet>();
  return (env) => {
    let set = sets.get(env);
    if (set === undefined) sets.set(env, (set = buildPolicySet(files, { env })));
    return set;
  };
}

interface Sources {
  candidate: string;
  baseline: string | null;
  unreadable: { count: number; first: { line: number; problem: string } | null };
}

function textReport(r: ReplayReport, s: Sources): string {
  const against = s.baseline === null ? 'the recorded answers' : s.baseline;
  let out = `${r.compared} of ${plural(r.records, 'recorded decision')} decided again under ${s.candidate}, compared with ${against}\n`;
  const line = (label: string, e: Examples): void => {
    if (e.count > 0) out += `${label}: ${e.count} (e.g. ${e.examples.join(', ')})\n`;
  };
  line('not replayable, recorded without arguments (LOG_ARGS)', r.notReplayable);
  line(
    s.baseline === null
      ? 'redeems of an approval, not compared without --baseline'
      : 'redeems of an approval (compared under the baseline)',
    r.redeems,
  );
  if (r.repeats > 0) out += `Idempotency-Key retries, skipped: ${r.repeats}\n`;
  if (r.inspections > 0) out += `inspections of results and model content (POST /inspect), skipped: ${r.inspections}\n`;
  if (r.otherSet.count > 0) {
    line(
      'decided by another policy set than the baseline (their flips are against the baseline, not what was answered)',
      r.otherSet,
    );
    for (const d of r.otherSet.digests) out += `  recorded digests: ${d.join(', ')}\n`;
  }
  line(
    'answered otherwise by the baseline than recorded, though its digests decided them (redacted arguments?)',
    r.notReproduced,
  );
  if (s.unreadable.count > 0 && s.unreadable.first !== null) {
    out += `unreadable lines: ${s.unreadable.count} (the first, line ${s.unreadable.first.line}: ${s.unreadable.first.problem})\n`;
  }
  const flipped = flipCount(r);
  if (r.compared === 0) return `${out}nothing compared: no decision was decided again\n`;
  if (flipped === 0) return `${out}no decision flips\n`;
  const rows = r.flips.map((f) => [
    `${f.from} → ${f.to}`,
    f.baselineRule,
    f.candidateRule,
    String(f.count),
    f.examples.join(', '),
  ]);
  return `${out}\n${table(['flip', 'rule before', 'rule after', 'count', 'examples'], rows)}\n${plural(flipped, 'decision')} flip\n`;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
