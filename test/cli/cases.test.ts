// `gatehouse cases`: decisions recorded by the real service (LOG_ARGS on) printed as test cases; the
// round trip: each case, saved beside the policies that decided it, passes `gatehouse test`, and with
// --want another decision it fails, which is what a regression test is for.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/main.js';
import { createTestApp, EXAMPLE_POLICIES, post, token } from '../helpers/app.js';

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

let dir: string;
let log: string;
const ids: Record<string, string> = {};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-cases-'));
  const logs: Record<string, unknown>[] = [];
  const quiet: Record<string, unknown>[] = [];
  const app = await createTestApp({ policyDir: EXAMPLE_POLICIES, env: 'prod', logs, logArgs: true });
  const noArgs = await createTestApp({ policyDir: EXAMPLE_POLICIES, env: 'prod', logs: quiet });
  try {
    const support = token({ sub: 'agent-7', team: 'support', agent: 'bot-1', roles: ['agent'] });
    const calls: [string, unknown, string][] = [
      [
        'lookup',
        {
          tool: 'lookup_order',
          args: { order: 'A1' },
          run: { id: 'run-1', steps: [{ tool: 'lookup_order', decision: 'allow' }] },
        },
        support,
      ],
      [
        'big-refund',
        { tool: 'refund', args: { order: 'A1', amount: 120, note: 'late' }, context: { tenant: 't-1' } },
        support,
      ],
      ['sales-refund', { tool: 'refund', args: { order: 'A1', amount: 40 } }, token({ sub: 'agent-9', team: 'sales' })],
      ['wipe', { tool: 'wipe_orders', args: {} }, support],
      ['pii', { tool: 'send_note', args: { to: 'ops', text: 'write to jane@example.com' } }, support],
    ];
    for (const [name, body, tok] of calls)
      ids[name] = ((await post(app.app, '/decide', body, tok)).json() as { decision_id: string }).decision_id;
    ids['no-args'] = (
      (await post(noArgs.app, '/decide', { tool: 'lookup_order', args: { order: 'A1' } })).json() as {
        decision_id: string;
      }
    ).decision_id;
  } finally {
    await app.close();
    await noArgs.close();
  }
  log = join(dir, 'decisions.jsonl');
  writeFileSync(log, `${[...logs, ...quiet].map((l) => JSON.stringify(l)).join('\n')}\n`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A directory with the policies that decided and one test file: the case printed for `id`. */
function besideThePolicies(name: string, text: string): string {
  const target = mkdtempSync(join(dir, `${name}-`));
  copyFileSync(join(EXAMPLE_POLICIES, 'payments.yaml'), join(target, 'payments.yaml'));
  writeFileSync(join(target, 'logged.test.yaml'), text);
  return target;
}

describe('gatehouse cases --from --id', () => {
  it('prints a case with the recorded request, caller and answer', async () => {
    const r = await run('cases', '--from', log, '--id', ids['big-refund']!);
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(r.out).toMatch(
      new RegExp(
        `^# From decision ${ids['big-refund']}, \\d{4}-\\d\\d-\\d\\dT[^,]+, decided by sha256:[0-9a-f]{64}\\.\\n`,
      ),
    );
    const doc = parse(r.out) as { cases: Record<string, unknown>[] };
    expect(doc.cases).toHaveLength(1);
    expect(doc.cases[0]).toMatchObject({
      tool: 'refund',
      args: { order: 'A1', amount: 120, note: 'late' },
      claims: { sub: 'agent-7', team: 'support', agent: 'bot-1', roles: ['agent'] },
      env: 'prod',
      context: { tenant: 't-1' },
      want: 'require_approval',
      rule: 'refund-support',
      kind: 'refund_over_cap',
    });
  });

  it('the round trip: every case made from a decision passes gatehouse test beside the policies that decided', async () => {
    for (const name of ['lookup', 'big-refund', 'sales-refund', 'wipe', 'pii']) {
      const printed = await run('cases', '--from', log, '--id', ids[name]!);
      expect(printed.code, name).toBe(0);
      const tested = await run('test', besideThePolicies(name, printed.out));
      expect(tested.err, name).toBe('');
      expect(tested.out, name).toBe('1 passed, 0 failed\n');
      expect(tested.code, name).toBe(0);
    }
    const lookup = parse((await run('cases', '--from', log, '--id', ids.lookup!)).out) as { cases: { run: unknown }[] };
    expect(lookup.cases[0]!.run).toEqual({ id: 'run-1', steps: [{ tool: 'lookup_order', decision: 'allow' }] });
  });

  it('--want: the case wants another decision, without the old rule and kind; against the same policies it fails', async () => {
    const r = await run('cases', '--from', log, '--id', ids['big-refund']!, '--want', 'deny');
    expect(r.code).toBe(0);
    const c = (parse(r.out) as { cases: Record<string, unknown>[] }).cases[0]!;
    expect(c).toMatchObject({ want: 'deny' });
    expect(c.name).toContain('(recorded require_approval)');
    expect(c).not.toHaveProperty('rule');
    expect(c).not.toHaveProperty('kind');
    const tested = await run('test', besideThePolicies('want', r.out));
    expect(tested.code).toBe(1);
    expect(tested.out).toContain('decision: want deny, got require_approval');
  });

  it('exit 2: a decision recorded without arguments, an id not in the log, a bad --want, missing options', async () => {
    const none = await run('cases', '--from', log, '--id', ids['no-args']!);
    expect(none).toMatchObject({ code: 2, out: '' });
    expect(none.err).toContain('recorded without its arguments');
    const missing = await run('cases', '--from', log, '--id', 'not-an-id');
    expect(missing).toMatchObject({ code: 2, out: '' });
    expect(missing.err).toContain('no decision not-an-id');
    expect((await run('cases', '--from', log, '--id', ids.lookup!, '--want', 'maybe')).code).toBe(2);
    expect((await run('cases', '--id', ids.lookup!)).code).toBe(2);
    expect((await run('cases', '--from', log)).code).toBe(2);
    expect(readFileSync(log, 'utf8')).toContain(ids.lookup!);
  });
});
