// A POST /inspect record (a decision log line with `stage`) read back: it keeps its stage, replay
// skips it (it is not a call: deciding it as one would report flips that never were), and cases
// refuses to make a test case of it.
import { describe, expect, it } from 'vitest';
import { printCase } from '../../src/cli/cases.js';
import { buildPolicySet } from '../../src/policy/load.js';
import { type DecisionRecord, recordFromLogLine } from '../../src/policy/record.js';
import { replay } from '../../src/policy/replay.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const set = buildPolicySet([{ path: 'a.yaml', bytes: enc('policy: a\ndefault: deny\n') }]);
const line = (extra: Record<string, unknown>) => ({
  msg: 'decision',
  decision_id: `id-${JSON.stringify(extra).length}`,
  tool: 'read_file',
  decision: 'allow',
  rule: 'builtin#guards',
  policies: set.digests,
  user: 'u1',
  env: null,
  args: { path: 'a' },
  ...extra,
});

describe('records of POST /inspect', () => {
  it('keep their stage; an unknown stage is not a decision line', () => {
    const r = recordFromLogLine(line({ stage: 'result' })) as DecisionRecord;
    expect(r.stage).toBe('result');
    expect((recordFromLogLine(line({})) as DecisionRecord).stage).toBeUndefined();
    expect(recordFromLogLine(line({ stage: 'args' }))).toMatch(/^not a decision log line: \/stage/);
  });

  it('replay skips them and counts them', () => {
    const records = [line({ stage: 'result' }), line({ stage: 'llm_request', tool: 'llm_request' }), line({})].map(
      (l) => recordFromLogLine(l) as DecisionRecord,
    );
    const report = replay(records, { candidate: () => set, baseline: null, defaultEnv: null });
    expect(report).toMatchObject({ records: 3, inspections: 2, compared: 1 });
    expect(report.flips).toEqual([
      {
        from: 'allow',
        to: 'deny',
        baselineRule: 'builtin#guards',
        candidateRule: 'a#default',
        count: 1,
        examples: [records[2]!.id],
      },
    ]);
  });

  it('cases refuses to make a test case of one', () => {
    let err = '';
    const code = printCase(recordFromLogLine(line({ stage: 'result' })) as DecisionRecord, undefined, {
      out: () => {},
      err: (s) => (err += s),
    });
    expect(code).not.toBe(0);
    expect(err).toMatch(/inspected a tool result \(POST \/inspect\), not a call/);
  });
});
