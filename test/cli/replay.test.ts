// `gatehouse replay`: decisions recorded by the real service (its decision log captured, LOG_ARGS on)
// decided again under a candidate set, with known flips: a claim the candidate reads (trial callers),
// a lower approval threshold, a team now allowed to delete. Also: a line recorded without arguments is
// not replayable, a baseline directory is compared by digest, and the exit codes CI reads.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/main.js';
import { createTestApp, post, token } from '../helpers/app.js';

const BASELINE = 'test/cli/fixtures/replay/baseline';
const CANDIDATE = 'test/cli/fixtures/replay/candidate';

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

interface Recorded {
  file: string;
  ids: Record<string, string>;
}

/** The calls, each decided by the service serving BASELINE; their decision log lines, as JSON lines, in a file. */
async function record(dir: string): Promise<Recorded> {
  const logs: Record<string, unknown>[] = [];
  const quiet: Record<string, unknown>[] = [];
  const ids: Record<string, string> = {};
  const withArgs = await createTestApp({ policyDir: BASELINE, logs, logArgs: true });
  const withoutArgs = await createTestApp({ policyDir: BASELINE, logs: quiet });
  try {
    const calls: [string, { tool: string; args?: Record<string, unknown> }, string][] = [
      [
        'lookup',
        { tool: 'lookup_order', args: { order: 'A1' } },
        token({ sub: 'agent-1', team: 'support', tier: 'paid' }),
      ],
      [
        'trial-lookup',
        { tool: 'lookup_order', args: { order: 'A2' } },
        token({ sub: 'agent-2', team: 'support', tier: 'trial' }),
      ],
      ['trial-lookup-2', { tool: 'lookup_order', args: { order: 'A3' } }, token({ sub: 'agent-3', tier: 'trial' })],
      ['refund-80', { tool: 'refund', args: { amount: 80 } }, token({ sub: 'agent-1', team: 'support' })],
      ['refund-200', { tool: 'refund', args: { amount: 200 } }, token({ sub: 'agent-1', team: 'support' })],
      ['refund-30', { tool: 'refund', args: { amount: 30 } }, token({ sub: 'agent-1', team: 'support' })],
      ['ops-delete', { tool: 'delete_order', args: { order: 'A1' } }, token({ sub: 'op-1', team: 'ops' })],
      ['support-delete', { tool: 'delete_order', args: { order: 'A1' } }, token({ sub: 'agent-1', team: 'support' })],
    ];
    for (const [name, body, tok] of calls) {
      const res = await post(withArgs.app, '/decide', body, tok);
      ids[name] = (res.json() as { decision_id: string }).decision_id;
    }
    const res = await post(
      withoutArgs.app,
      '/decide',
      { tool: 'lookup_order', args: { order: 'A4' } },
      token({ sub: 'agent-4', tier: 'trial' }),
    );
    ids['no-args'] = (res.json() as { decision_id: string }).decision_id;
  } finally {
    await withArgs.close();
    await withoutArgs.close();
  }
  const lines = [...logs, ...quiet].filter((l) => l.msg === 'decision').map((l) => JSON.stringify(l));
  expect(lines).toHaveLength(9);
  // A log holds other lines too: another message, and a line that is not JSON (a crash's trace).
  const file = join(dir, 'decisions.jsonl');
  writeFileSync(
    file,
    `${JSON.stringify({ level: 30, msg: 'policies reloaded' })}\n${lines.slice(0, 4).join('\n')}\nnot json\n${lines.slice(4).join('\n')}\n`,
  );
  return { file, ids };
}

let dir: string;
let rec: Recorded;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-replay-'));
  rec = await record(dir);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the decision log line', () => {
  it('records with LOG_ARGS what a replay needs: env, roles, args, claims (redacted as args are)', async () => {
    const logs: Record<string, unknown>[] = [];
    const l = await createTestApp({ policyDir: BASELINE, logs, logArgs: true });
    try {
      const run = { id: 'run-1', steps: [{ tool: 'lookup_order', decision: 'allow' as const }] };
      await post(
        l.app,
        '/decide',
        { tool: 'lookup_order', args: { order: 'A1' }, run, context: { repo: 'shop', api_key: 'CANARY' } },
        token({ sub: 'a', roles: ['x'], password: 'CANARY' }),
      );
      const line = logs.find((x) => x.msg === 'decision')!;
      expect(line).toMatchObject({
        env: 'prod',
        roles: ['x'],
        args: { order: 'A1' },
        run,
        context: { repo: 'shop', api_key: '[redacted]' },
      });
      expect(line.claims).toMatchObject({ sub: 'a', roles: ['x'], password: '[redacted]' });
      expect(JSON.stringify(logs)).not.toContain('CANARY');
    } finally {
      await l.close();
    }
  });

  it('without LOG_ARGS: env and roles only, no arguments, claims, context or run view', async () => {
    const logs: Record<string, unknown>[] = [];
    const l = await createTestApp({ policyDir: BASELINE, logs });
    try {
      await post(
        l.app,
        '/decide',
        { tool: 'lookup_order', args: { order: 'A1' }, context: { repo: 'shop' } },
        token({ sub: 'a', tier: 'trial' }),
      );
      const line = logs.find((x) => x.msg === 'decision')!;
      expect(line).toMatchObject({ env: 'prod', roles: [] });
      for (const key of ['args', 'claims', 'context', 'run']) expect(line).not.toHaveProperty(key);
    } finally {
      await l.close();
    }
  });
});

describe('gatehouse replay --from', () => {
  it('against the recorded answers: one row per flip and rule, counts and example ids; exit 1', async () => {
    const r = await run('replay', '--policies', CANDIDATE, '--from', rec.file);
    expect(r.err).toBe('');
    expect(r.code).toBe(1);
    const { ids } = rec;
    expect(r.out).toContain('8 of 9 recorded decisions decided again');
    expect(r.out).toContain(`not replayable, recorded without arguments (LOG_ARGS): 1 (e.g. ${ids['no-args']})`);
    expect(r.out).toContain('unreadable lines: 1 (the first, line 6: not a JSON line)');
    const rows = r.out.split('\n').filter((l) => l.includes(' → '));
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatch(
      new RegExp(
        `^allow → deny\\s+lookups\\s+no-trial-lookups\\s+2\\s+${ids['trial-lookup']}, ${ids['trial-lookup-2']}$`,
      ),
    );
    expect(rows[1]).toMatch(new RegExp(`^allow → require_approval\\s+refunds\\s+refunds\\s+1\\s+${ids['refund-80']}$`));
    expect(rows[2]).toMatch(new RegExp(`^deny → allow\\s+shop#default\\s+ops-deletes\\s+1\\s+${ids['ops-delete']}$`));
    expect(r.out).toMatch(/\n4 decisions flip\n$/);
  });

  it('--accept: the same report, exit 0; the serving set as candidate flips nothing, exit 0', async () => {
    const accepted = await run('replay', '--policies', CANDIDATE, '--from', rec.file, '--accept');
    expect(accepted.code).toBe(0);
    expect(accepted.out).toContain('4 decisions flip');
    const same = await run('replay', '--policies', BASELINE, '--from', rec.file);
    expect(same.code).toBe(0);
    expect(same.out).toContain('no decision flips');
  });

  it('--json: the report for CI', async () => {
    const r = await run('replay', '--policies', CANDIDATE, '--from', rec.file, '--json');
    expect(r.code).toBe(1);
    const report = JSON.parse(r.out) as Record<string, unknown>;
    expect(report).toMatchObject({
      records: 9,
      compared: 8,
      flipped: 4,
      notReplayable: { count: 1, examples: [rec.ids['no-args']] },
      otherSet: { count: 0 },
      unreadable: { count: 1, first: { line: 6 } },
    });
    expect(report.flips).toEqual([
      {
        from: 'allow',
        to: 'deny',
        baselineRule: 'lookups',
        candidateRule: 'no-trial-lookups',
        count: 2,
        examples: [rec.ids['trial-lookup'], rec.ids['trial-lookup-2']],
      },
      {
        from: 'allow',
        to: 'require_approval',
        baselineRule: 'refunds',
        candidateRule: 'refunds',
        count: 1,
        examples: [rec.ids['refund-80']],
      },
      {
        from: 'deny',
        to: 'allow',
        baselineRule: 'shop#default',
        candidateRule: 'ops-deletes',
        count: 1,
        examples: [rec.ids['ops-delete']],
      },
    ]);
  });

  it('--baseline DIR: decided under both; the set that decided matches by digest, so nothing is reported as another set', async () => {
    const r = await run('replay', '--policies', CANDIDATE, '--baseline', BASELINE, '--from', rec.file, '--json');
    expect(r.code).toBe(1);
    const report = JSON.parse(r.out) as {
      flipped: number;
      otherSet: { count: number };
      notReproduced: { count: number };
    };
    expect(report).toMatchObject({ flipped: 4, otherSet: { count: 0 }, notReproduced: { count: 0 } });
  });

  it('a baseline whose digests did not decide the records: reported, with the recorded digests', async () => {
    const r = await run('replay', '--policies', CANDIDATE, '--baseline', CANDIDATE, '--from', rec.file);
    expect(r.code).toBe(0); // candidate against itself: nothing flips
    expect(r.out).toContain('decided by another policy set than the baseline');
    expect(r.out).toMatch(/recorded digests: sha256:[0-9a-f]{64}\n/);
    expect(r.out).toContain('no decision flips');
  });

  it('nothing decided again is a failure, not "no decision flips": exit 1 stating the count not replayable; --allow-empty exits 0', async () => {
    // Only the line recorded without arguments, and an empty log.
    const quiet = join(dir, 'quiet.jsonl');
    const line = readFileSync(rec.file, 'utf8')
      .split('\n')
      .find((l) => l.includes(rec.ids['no-args']!));
    writeFileSync(quiet, `${line}\n`);
    const empty = join(dir, 'empty.jsonl');
    writeFileSync(empty, '');
    const r = await run('replay', '--policies', CANDIDATE, '--from', quiet);
    expect(r.code).toBe(1);
    expect(r.out).toContain('not replayable, recorded without arguments (LOG_ARGS): 1');
    expect(r.out).not.toContain('no decision flips');
    expect(r.err).toBe(
      'gatehouse replay: no decision was decided again: 0 of 1 recorded decision, 1 not replayable (recorded without arguments: LOG_ARGS=true records them); --allow-empty accepts this\n',
    );
    expect(await run('replay', '--policies', CANDIDATE, '--from', quiet, '--accept')).toMatchObject({ code: 1 });
    expect(await run('replay', '--policies', CANDIDATE, '--from', quiet, '--allow-empty')).toMatchObject({
      code: 0,
      err: '',
    });
    const none = await run('replay', '--policies', CANDIDATE, '--from', empty, '--json');
    expect(none.code).toBe(1);
    expect(JSON.parse(none.out)).toMatchObject({ records: 0, compared: 0, flipped: 0 });
    expect(none.err).toContain('0 of 0 recorded decisions, 0 not replayable');
    expect((await run('replay', '--policies', CANDIDATE, '--from', empty, '--allow-empty')).code).toBe(0);
  });

  it('bad input exits 2: a missing option, a log that cannot be read, policies that do not load', async () => {
    expect((await run('replay', '--from', rec.file)).code).toBe(2);
    expect((await run('replay', '--policies', CANDIDATE)).code).toBe(2);
    const missing = await run('replay', '--policies', CANDIDATE, '--from', join(dir, 'nope.jsonl'));
    expect(missing).toMatchObject({ code: 2, out: '' });
    expect(missing.err).toContain('ENOENT');
    expect((await run('replay', '--policies', join(dir, 'no-such-dir'), '--from', rec.file)).code).toBe(2);
  });
});
