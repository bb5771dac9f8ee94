// Exact across replicas (docs/spec.md section 2.9): two app instances, each with its own connections,
// on one real PostgreSQL; 100 concurrent calls against a budget with room for 37 allow exactly 37,
// every time; the same for a rate limit, for a budget of decimal amounts, and for a call two counters
// select (all or nothing: a call refused by one counts in neither). One-counter calls are counted on
// the lanes (src/db/lanes.ts: several calls in one transaction), two-counter calls in transactions of
// the pool; a last test counts one-counter calls in the pool's transactions too (without lanes).
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql } from '../../src/db/connect.js';
import { createTestApp, post, token, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { policyDir } from '../helpers/process.js';
import { runs } from '../helpers/runs.js';

const POLICY = `policy: exact
default: allow
budgets:
  - {id: room-37, tools: pay, sum: amount, max: 37, per: day, scope: user, on_exceed: deny}
  - {id: cents, tools: tip, sum: amount, max: 3.7, per: day, scope: user, on_exceed: require_approval}
  - {id: pair-a, tools: both, max: 37, per: day, scope: user}
  - {id: pair-b, tools: both, max: 60, per: day, scope: team}
rate_limits:
  - {id: rate-37, tools: ping, calls: 37, per: 3600, scope: user}
`;

// Each race is run again to catch an interleaving one round missed: 5 rounds deep (test/helpers/runs.ts).
const ROUNDS = runs(5, 1);
const CALLS = 100;

let db: TestDatabase;
let dir: string;
const replicas: TestApp[] = [];
/** The same two replicas without lanes: every counted call in a transaction of the pool. */
const poolReplicas: TestApp[] = [];

beforeAll(async () => {
  [db, dir] = await Promise.all([createTestDatabase(), policyDir({ 'exact.yaml': POLICY })]);
  for (const name of ['replica-a', 'replica-b']) {
    // A pool of its own per replica, as two processes would have.
    const sql = createSql(db.url, { max: 10, applicationName: name });
    replicas.push(
      await createTestApp({
        policyDir: dir,
        env: null,
        database: { url: db.url, sql, drop: () => sql.end({ timeout: 5 }) },
      }),
    );
    const poolSql = createSql(db.url, { max: 10, applicationName: `${name}-pool` });
    poolReplicas.push(
      await createTestApp({
        policyDir: dir,
        env: null,
        lanes: false,
        database: { url: db.url, sql: poolSql, drop: () => poolSql.end({ timeout: 5 }) },
      }),
    );
  }
}, 60_000);

afterAll(async () => {
  for (const r of [...replicas, ...poolReplicas]) {
    await r.close();
    await r.db?.drop();
  }
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** 100 calls at once, alternating between the two replicas. */
async function storm(body: (i: number) => unknown, tok: string, apps = replicas): Promise<LightMyRequestResponse[]> {
  return Promise.all(Array.from({ length: CALLS }, (_, i) => post(apps[i % 2]!.app, '/decide', body(i), tok)));
}

function tally(responses: LightMyRequestResponse[]): { allowed: number; refused: number; other: string[] } {
  let allowed = 0;
  let refused = 0;
  const other: string[] = [];
  for (const r of responses) {
    const decision = r.headers['content-type']?.toString().includes('json')
      ? (r.json() as { decision?: string }).decision
      : undefined;
    if (r.statusCode === 200 && decision === 'allow') allowed++;
    else if (r.statusCode === 403 && decision !== 'allow') refused++;
    else other.push(`${r.statusCode} ${r.body.slice(0, 200)}`);
  }
  return { allowed, refused, other };
}

async function counted(budget: string, sub: string): Promise<string | null> {
  const [row] = await db.sql<
    { counted: string }[]
  >`select counted::text from budget_counters where budget = ${budget} and scope_key = ${`user:${sub}`}`;
  return row?.counted ?? null;
}

describe('two replicas, 100 concurrent calls', () => {
  it(`a budget with room for 37: exactly 37 allowed, ${ROUNDS} times over`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const sub = `payer-${round}-${randomUUID().slice(0, 8)}`;
      const result = tally(await storm(() => ({ tool: 'pay', args: { amount: 1 } }), token({ sub })));
      expect(result, `round ${round}`).toEqual({ allowed: 37, refused: 63, other: [] });
      expect(await counted('room-37', sub)).toBe('37');
    }
  });

  it(`a budget of decimal amounts (0.1 each, room for 3.7): exactly 37 allowed, ${ROUNDS} times over`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const sub = `tipper-${round}-${randomUUID().slice(0, 8)}`;
      const responses = await storm((i) => ({ tool: 'tip', args: { amount: 0.1, n: i } }), token({ sub }));
      const result = tally(responses);
      expect(result, `round ${round}`).toEqual({ allowed: 37, refused: 63, other: [] });
      // Past the room, each asks an operator (nothing counted for those).
      expect(
        responses.filter((r) => r.statusCode === 403).every((r) => (r.json() as { rule: string }).rule === 'cents'),
      ).toBe(true);
      expect(await counted('cents', sub)).toBe('3.7');
    }
  });

  it(`a rate limit of 37 calls per hour: exactly 37 allowed, ${ROUNDS} times over`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const sub = `pinger-${round}-${randomUUID().slice(0, 8)}`;
      const result = tally(await storm(() => ({ tool: 'ping' }), token({ sub })));
      expect(result, `round ${round}`).toEqual({ allowed: 37, refused: 63, other: [] });
      const [row] = await db.sql<
        { n: number }[]
      >`select cardinality(times) as n from rate_limit_calls where rate_limit = 'rate-37' and scope_key = ${`user:${sub}`}`;
      expect(row?.n).toBe(37);
    }
  });

  it(`without lanes (each call a transaction of the pool): a budget and a rate limit with room for 37, exactly 37 allowed, ${ROUNDS} times over`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const sub = `pooled-${round}-${randomUUID().slice(0, 8)}`;
      expect(
        tally(await storm(() => ({ tool: 'pay', args: { amount: 1 } }), token({ sub }), poolReplicas)),
        `budget, round ${round}`,
      ).toEqual({
        allowed: 37,
        refused: 63,
        other: [],
      });
      expect(await counted('room-37', sub)).toBe('37');
      expect(
        tally(await storm(() => ({ tool: 'ping' }), token({ sub }), poolReplicas)),
        `rate limit, round ${round}`,
      ).toEqual({
        allowed: 37,
        refused: 63,
        other: [],
      });
    }
  });

  it('two counters on one call, all or nothing: 37 allowed, and the other counter counted exactly those 37', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const sub = `both-${round}-${randomUUID().slice(0, 8)}`;
      const team = `team-${round}-${randomUUID().slice(0, 8)}`;
      const result = tally(await storm(() => ({ tool: 'both' }), token({ sub, team })));
      expect(result, `round ${round}`).toEqual({ allowed: 37, refused: 63, other: [] });
      const [row] = await db.sql<
        { counted: string }[]
      >`select counted::text from budget_counters where budget = 'pair-b' and scope_key = ${`team:${team}`}`;
      // The 63 refused by pair-a counted in pair-b neither, though pair-b had room for them.
      expect(row?.counted).toBe('37');
    }
  });
});
