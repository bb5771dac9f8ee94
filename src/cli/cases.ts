// `gatehouse cases --from FILE.jsonl --id ID [--want DECISION]`: a logged decision as a policy test
// case (`*.test.yaml`), ready to save beside the policies, so the decision is checked by
// `gatehouse test` from then on. Exit 0 printed, 2 bad options, an unreadable log, an id not in it,
// or a decision that cannot be a case (recorded without arguments; a redeem without --want).
import { stringify } from 'yaml';
import type { Decision } from '../policy/model.js';
import { type DecisionRecord, recordCase } from '../policy/record.js';
import { defineCommand, parseCommand, usageError } from './args.js';
import { decisionById } from '../records/query.js';
import { readDecisionLog } from './decision-log.js';
import { withDecisionStore } from './decision-store.js';
import { EXIT, type Io } from './io.js';

const DECISIONS: readonly Decision[] = ['allow', 'deny', 'abort', 'require_approval'];

export const CASES = defineCommand({
  name: 'cases',
  usage: `usage: gatehouse cases --from FILE.jsonl --id ID [--want DECISION]
       gatehouse cases --from-decision ID [--want DECISION]

Prints a policy test file (*.test.yaml) with one case made from the decision ID of a captured
decision log, or of the decision store (DECISION_STORE=postgres, read from DATABASE_URL), recorded
with LOG_ARGS=true: its tool, arguments, caller's claims, environment, run view and context, and as
wanted the recorded decision, rule and approval kind. Save it beside the
policies and \`gatehouse test\` checks that decision from then on.

options:
  --from FILE        the decision log, JSON lines (- for stdin)
  --id ID            the decision_id of the decision
  --from-decision ID the decision ID of the decision store of DATABASE_URL, instead of --from and --id
  --want DECISION    the decision the case wants instead of the recorded one (allow, deny, abort,
                     require_approval): for a regression being fixed; the recorded rule and kind are
                     then left out
  -h, --help         show this help

exit status: 0 printed; 2 a problem in the arguments, the log or the store, an id it does not hold,
or a decision recorded without arguments (or a redeem of an approval, without --want)
`,
  options: {
    from: { type: 'string' },
    id: { type: 'string' },
    'from-decision': { type: 'string' },
    want: { type: 'string' },
  },
  positionals: { min: 0, max: 0 },
});

export async function runCases(argv: string[], io: Io): Promise<number> {
  const parsed = parseCommand(argv, CASES, io);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const want = values.want;
  if (want !== undefined && !DECISIONS.includes(want as Decision)) {
    return usageError(io, 'cases', `--want must be one of ${DECISIONS.join(', ')}`, CASES.usage);
  }
  const stored = values['from-decision'];
  if (stored !== undefined) {
    if (values.from !== undefined || values.id !== undefined)
      return usageError(io, 'cases', '--from-decision goes without --from and --id', CASES.usage);
    return withDecisionStore('cases', io, async (sql) => {
      const record = await decisionById(sql, stored);
      if (record === null) {
        io.err(`gatehouse cases: no decision ${stored} in the decision store\n`);
        return EXIT.invalid;
      }
      return printCase(record, want as Decision | undefined, io);
    });
  }
  if (values.from === undefined)
    return usageError(io, 'cases', '--from FILE (or --from-decision ID) is required', CASES.usage);
  if (values.id === undefined) return usageError(io, 'cases', '--id ID is required', CASES.usage);
  let records: DecisionRecord[];
  try {
    ({ records } = await readDecisionLog(values.from));
  } catch (err) {
    io.err(
      `gatehouse cases: cannot read ${values.from}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}\n`,
    );
    return EXIT.invalid;
  }
  const record = records.find((r) => r.id === values.id && !r.repeated);
  if (record === undefined) {
    io.err(`gatehouse cases: no decision ${values.id} in ${values.from}\n`);
    return EXIT.invalid;
  }
  return printCase(record, want as Decision | undefined, io);
}

/** The case of one record on stdout; shared with `--from-decision` (the decision store). */
export function printCase(record: DecisionRecord, want: Decision | undefined, io: Io): number {
  if (record.stage !== undefined) {
    io.err(
      `gatehouse cases: decision ${record.id} inspected a ${record.stage === 'result' ? 'tool result' : 'model stage'} (POST /inspect), not a call: a test case decides calls\n`,
    );
    return EXIT.invalid;
  }
  const args = record.args;
  if (args === undefined) {
    io.err(
      `gatehouse cases: decision ${record.id} was recorded without its arguments (LOG_ARGS was off): it cannot be decided again\n`,
    );
    return EXIT.invalid;
  }
  if (record.approvalId !== undefined && want === undefined) {
    io.err(
      `gatehouse cases: decision ${record.id} redeemed approval ${record.approvalId}: it answered what the approval allowed, not what the policies say; give --want\n`,
    );
    return EXIT.invalid;
  }
  const c = recordCase({ ...record, args }, want);
  const when = record.time === null ? '' : `, ${record.time}`;
  io.out(`# From decision ${record.id}${when}, decided by ${record.digests.join(', ') || '(no policy file)'}.\n`);
  io.out(stringify({ cases: [c] }, { lineWidth: 0 }));
  return EXIT.ok;
}
