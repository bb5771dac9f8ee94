// The engine driven directly, against the real PostgreSQL, with no app and no HTTP: what it answers,
// what it records (one record per answer, in the log and the decision store's queue), and that a
// capability it lacks is NotConfiguredError, never an allow.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Answer, type Engine } from '../../src/engine/index.js';
import { NotConfiguredError } from '../../src/engine/errors.js';
import type { Identity } from '../../src/policy/model.js';
import { sha256 } from '../../src/json/canonical.js';
import type { DecisionLine } from '../../src/policy/record.js';
import { createTestParts, type TestEngineParts } from '../helpers/app.js';
import { callLog, decisionOf, settled } from '../helpers/engine.js';
import { policyDir } from '../helpers/process.js';

const AGENT: Identity = Object.freeze({
  user: 'engine-agent',
  team: 'support',
  agent: 'bot',
  roles: Object.freeze([]),
});
const OPERATOR = { sub: 'engine-operator' };

describe('the engine against PostgreSQL', () => {
  let built: TestEngineParts;
  let engine: Engine;
  const queued: DecisionLine[] = [];

  beforeAll(async () => {
    built = await createTestParts({ database: true, env: 'prod' });
    // The decision store's queue, observed: what the engine hands it is the record it logs.
    engine = createEngine({
      ...built.parts,
      records: { writer: { push: (line) => queued.push(line), rowOf: () => null }, sql: built.db!.sql },
    });
  });
  afterAll(async () => {
    await built.close();
  });

  it('a call that asks for no state is answered without awaiting, and recorded once, the same in the log and the store', () => {
    const log = callLog();
    queued.length = 0;
    const answer = engine.decide({
      request: { tool: 'lookup_order', args: { order: 'A1' } },
      identity: AGENT,
      claim: () => undefined,
      log,
    });
    expect(answer).not.toBeInstanceOf(Promise);
    expect(decisionOf(answer as Answer)).toMatchObject({ status: 200, body: { decision: 'allow', rule: 'lookups' } });
    const records = log.lines.filter((l) => l.msg === 'decision');
    expect(records).toHaveLength(1);
    expect(queued).toHaveLength(1);
    const { msg: _msg, level: _level, ...line } = records[0]!;
    expect(line).toEqual(queued[0]);
    expect(queued[0]).toMatchObject({
      tool: 'lookup_order',
      decision: 'allow',
      rule: 'lookups',
      user: 'engine-agent',
      team: 'support',
      env: 'prod',
    });
  });

  it('never reads the Idempotency-Key of a call that needs none', () => {
    let read = 0;
    const claim = (): undefined => {
      read++;
      return undefined;
    };
    const answer = engine.decide({
      request: { tool: 'wipe_orders', args: {} },
      identity: AGENT,
      claim,
      log: callLog(),
    });
    expect(decisionOf(answer as Answer).body.decision).toBe('abort'); // no-destructive-in-prod
    expect(read).toBe(0);
  });

  it('files, then redeems a granted approval once: allow, then require_approval again', async () => {
    const request = { tool: 'refund', args: { order: 'E1', amount: 120 } };
    const asked = decisionOf(
      await settled(engine.decide({ request, identity: AGENT, claim: () => undefined, log: callLog() })),
    );
    expect(asked.body).toMatchObject({ decision: 'require_approval', rule: 'refund-support' });
    const filed = await engine.file({
      request,
      identity: AGENT,
      claim: () => undefined,
      log: callLog(),
      seesNotes: false,
    });
    expect(filed.kind === 'text' && filed.status).toBe(201);
    const id = (decisionOf(filed).body as { id: string }).id;
    expect((await engine.approvals().store.grant(id, OPERATOR, null)).ok).toBe(true);
    const log = callLog();
    const redeemed = decisionOf(
      await settled(engine.decide({ request, identity: AGENT, approvalId: id, claim: () => undefined, log })),
    );
    expect(redeemed).toMatchObject({ status: 200, body: { decision: 'allow' } });
    expect(log.lines.find((l) => l.msg === 'decision')).toMatchObject({ decision: 'allow', approval_id: id });
    const again = decisionOf(
      await settled(
        engine.decide({ request, identity: AGENT, approvalId: id, claim: () => undefined, log: callLog() }),
      ),
    );
    expect(again.body.decision).toBe('require_approval');
    expect((await engine.approvals().store.get(id))?.status).toBe('consumed');
  });

  it('an Idempotency-Key retry of a redeem is answered as first given, under the first decision id, and consumes nothing more', async () => {
    const request = { tool: 'refund', args: { order: 'E2', amount: 150 } };
    const filed = await engine.file({
      request,
      identity: AGENT,
      claim: () => undefined,
      log: callLog(),
      seesNotes: false,
    });
    const id = (decisionOf(filed).body as { id: string }).id;
    await engine.approvals().store.grant(id, OPERATOR, null);
    const claim = () => ({
      sub: AGENT.user,
      route: 'decide' as const,
      key: `engine-${id}`,
      bodyHash: sha256(id),
      identityHash: sha256('same'),
    });
    const first = await settled(engine.decide({ request, identity: AGENT, approvalId: id, claim, log: callLog() }));
    const log = callLog();
    const retry = await settled(engine.decide({ request, identity: AGENT, approvalId: id, claim, log }));
    expect(first.kind === 'text' && retry.kind === 'text' && retry.replayed).toBe(true);
    expect(decisionOf(retry).body.decision_id).toBe(decisionOf(first).body.decision_id);
    expect(log.lines.find((l) => l.msg === 'decision')).toMatchObject({ decision: 'allow', replayed: true });
  });

  it('reloads the serving set and counts it', async () => {
    const before =
      (await engine.parts.metrics.reloads.get()).values.find((v) => v.labels.result === 'success')?.value ?? 0;
    expect(await engine.reload()).toEqual({ ok: true });
    const after =
      (await engine.parts.metrics.reloads.get()).values.find((v) => v.labels.result === 'success')?.value ?? 0;
    expect(after).toBe(before + 1);
  });
});

describe('the engine counting a rate limit', () => {
  let built: TestEngineParts;
  let engine: Engine;
  beforeAll(async () => {
    const dir = await policyDir({
      'r.yaml': 'policy: r\ndefault: allow\nrate_limits:\n  - {id: two, calls: 2, per: 60, scope: user}\n',
    });
    built = await createTestParts({ policyDir: dir, env: null, database: true });
    engine = createEngine(built.parts);
  });
  afterAll(async () => {
    await built.close();
  });

  it('counts each allowed call in PostgreSQL, refuses the third, and records where each counter stood', async () => {
    const identity = { ...AGENT, user: 'engine-counted' };
    const logs = [callLog(), callLog(), callLog()];
    const answers: { status: number; body: Record<string, unknown> }[] = [];
    for (const log of logs)
      answers.push(
        decisionOf(
          await settled(engine.decide({ request: { tool: 't', args: {} }, identity, claim: () => undefined, log })),
        ),
      );
    expect(answers.map((a) => a.body.decision)).toEqual(['allow', 'allow', 'deny']);
    const budgets = logs.map((l) => l.lines.find((x) => x.msg === 'decision')?.budgets);
    expect(budgets).toEqual([
      [{ id: 'two', counted: true, standing: '1' }],
      [{ id: 'two', counted: true, standing: '2' }],
      [{ id: 'two', counted: false, standing: '2' }],
    ]);
    const standings = await engine.standings(identity, { admin: false, max: 10 });
    expect(standings).toMatchObject({ limits: [{ id: 'two', counters: [{ calls: 2 }] }] });
  });
});

describe('the engine without a database', () => {
  it('a call that needs approvals or counters is NotConfiguredError, never an allow; the others are untouched', async () => {
    const built = await createTestParts({ env: 'prod' });
    const engine = createEngine(built.parts);
    try {
      const lookup = engine.decide({
        request: { tool: 'lookup_order', args: {} },
        identity: AGENT,
        claim: () => undefined,
        log: callLog(),
      });
      expect(decisionOf(await settled(lookup)).body.decision).toBe('allow');
      const cited = engine.decide({
        request: { tool: 'refund', args: { order: 'E3', amount: 120 } },
        identity: AGENT,
        approvalId: 'x',
        claim: () => undefined,
        log: callLog(),
      });
      await expect(settled(cited)).rejects.toBeInstanceOf(NotConfiguredError);
      await expect(
        engine.file({
          request: { tool: 'refund', args: { order: 'E3', amount: 120 } },
          identity: AGENT,
          claim: () => undefined,
          log: callLog(),
          seesNotes: false,
        }),
      ).rejects.toBeInstanceOf(NotConfiguredError);
      expect(() => engine.approvals()).toThrow(NotConfiguredError);
      await expect(engine.records({ limit: 1 })).rejects.toBeInstanceOf(NotConfiguredError);
    } finally {
      await built.close();
    }
  });
});
