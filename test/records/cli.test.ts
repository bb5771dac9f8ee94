// `gatehouse replay --from-db` and `gatehouse cases --from-decision` over the decision store the real
// service wrote (DECISION_STORE=postgres, LOG_ARGS on): the replay of the store reports what the
// replay of the same decisions' log lines reports, --since/--until select by time, and a case made
// from a stored decision passes `gatehouse test` beside the policies that decided it.
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql } from '../../src/db/connect.js';
import { runCli } from '../../src/main.js';
import { createTestApp, post, token } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

const BASELINE = 'test/cli/fixtures/replay/baseline';
const CANDIDATE = 'test/cli/fixtures/replay/candidate';

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

let db: TestDatabase;
let dir: string;
let logFile: string;
let between: string;
const ids: Record<string, string> = {};
const savedUrl = process.env.DATABASE_URL;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-from-db-'));
  db = await createTestDatabase();
  const logs: Record<string, unknown>[] = [];
  const quiet: Record<string, unknown>[] = [];
  const storeSql = createSql(db.url, { max: 2 });
  const withArgs = await createTestApp({ policyDir: BASELINE, logs, logArgs: true, decisionStore: { sql: storeSql } });
  const withoutArgs = await createTestApp({ policyDir: BASELINE, logs: quiet, decisionStore: { sql: storeSql } });
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
      ['refund-80', { tool: 'refund', args: { amount: 80 } }, token({ sub: 'agent-1', team: 'support' })],
      ['refund-200', { tool: 'refund', args: { amount: 200 } }, token({ sub: 'agent-1', team: 'support' })],
      ['ops-delete', { tool: 'delete_order', args: { order: 'A1' } }, token({ sub: 'op-1', team: 'ops' })],
    ];
    for (const [i, [name, body, tok]] of calls.entries()) {
      if (i === 3) {
        await new Promise((r) => setTimeout(r, 5)); // a distinct instant between the two halves
        between = new Date().toISOString();
        await new Promise((r) => setTimeout(r, 5));
      }
      ids[name] = ((await post(withArgs.app, '/decide', body, tok)).json() as { decision_id: string }).decision_id;
    }
    ids['no-args'] = (
      (
        await post(
          withoutArgs.app,
          '/decide',
          { tool: 'lookup_order', args: { order: 'A4' } },
          token({ sub: 'agent-4', tier: 'trial' }),
        )
      ).json() as {
        decision_id: string;
      }
    ).decision_id;
    await withArgs.writer!.flush();
    await withoutArgs.writer!.flush();
  } finally {
    await withArgs.close();
    await withoutArgs.close();
    await storeSql.end();
  }
  logFile = join(dir, 'decisions.jsonl');
  writeFileSync(
    logFile,
    `${[...logs, ...quiet]
      .filter((l) => l.msg === 'decision')
      .map((l) => JSON.stringify(l))
      .join('\n')}\n`,
  );
  process.env.DATABASE_URL = db.url;
});
afterAll(async () => {
  if (savedUrl === undefined) delete process.env.DATABASE_URL;
  else process.env.DATABASE_URL = savedUrl;
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('replay --from-db', () => {
  it('reports what the replay of the same decisions logged reports: the flips per rule, the records without arguments', async () => {
    const fromDb = await run('replay', '--policies', CANDIDATE, '--from-db', '--json');
    const fromLog = await run('replay', '--policies', CANDIDATE, '--from', logFile, '--json');
    expect(fromDb.code, fromDb.err).toBe(1);
    expect(fromLog.code).toBe(1);
    const { from: a, ...db } = JSON.parse(fromDb.out) as Record<string, unknown>;
    const { from: b, ...log } = JSON.parse(fromLog.out) as Record<string, unknown>;
    expect([a, b]).toEqual(['db', logFile]);
    expect(db).toEqual(log);
    expect(db).toMatchObject({ records: 6, notReplayable: { count: 1, examples: [ids['no-args']] } });
    expect(JSON.stringify(db.flips)).toContain(ids['ops-delete']);
    // The text report, and --accept.
    const text = await run('replay', '--policies', CANDIDATE, '--from-db', '--accept');
    expect(text.code).toBe(0);
    expect(text.out).toContain('deny → allow');
  });

  it('--since and --until select by the decision time', async () => {
    const before = JSON.parse(
      (await run('replay', '--policies', BASELINE, '--from-db', '--until', between, '--json')).out,
    ) as { records: number };
    const after = JSON.parse(
      (await run('replay', '--policies', BASELINE, '--from-db', '--since', between, '--json')).out,
    ) as { records: number };
    expect([before.records, after.records]).toEqual([3, 3]);
    expect((await run('replay', '--policies', BASELINE, '--from-db', '--since', 'yesterday')).code).toBe(2);
    expect((await run('replay', '--policies', BASELINE, '--from', logFile, '--since', between)).code).toBe(2);
    expect((await run('replay', '--policies', BASELINE, '--from', logFile, '--from-db')).code).toBe(2);
  });

  it('without DATABASE_URL, or with an unreachable one: exit 2, saying why', async () => {
    process.env.DATABASE_URL = '';
    const unset = await run('replay', '--policies', BASELINE, '--from-db');
    process.env.DATABASE_URL = 'postgres://nobody@127.0.0.1:1/none';
    const unreachable = await run('cases', '--from-decision', ids.lookup!);
    process.env.DATABASE_URL = db.url;
    expect([unset.code, unreachable.code]).toEqual([2, 2]);
    expect(unset.err).toContain('DATABASE_URL is not set');
    expect(unreachable.err).toContain('cannot read the decision store');
  });
});

describe('cases --from-decision', () => {
  it('prints a case from a stored decision that passes gatehouse test beside the policies', async () => {
    for (const name of ['lookup', 'refund-200', 'ops-delete']) {
      const printed = await run('cases', '--from-decision', ids[name]!);
      expect(printed.code, printed.err).toBe(0);
      expect(printed.out).toContain(`# From decision ${ids[name]}`);
      const target = mkdtempSync(join(dir, `${name}-`));
      copyFileSync(join(BASELINE, 'shop.yaml'), join(target, 'shop.yaml'));
      writeFileSync(join(target, 'recorded.test.yaml'), printed.out);
      const tested = await run('test', target);
      expect(tested.code, tested.out + tested.err).toBe(0);
    }
  });

  it('refuses a decision recorded without arguments, an unknown id, and --from with it', async () => {
    const noArgs = await run('cases', '--from-decision', ids['no-args']!);
    expect(noArgs.code).toBe(2);
    expect(noArgs.err).toContain('recorded without its arguments');
    const unknown = await run('cases', '--from-decision', '00000000-0000-4000-8000-000000000000');
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('no decision');
    expect((await run('cases', '--from-decision', ids.lookup!, '--from', logFile)).code).toBe(2);
  });
});
