// Exact across replicas (docs/spec.md section 2.9): two engines, each with its own connections,
// on one real PostgreSQL; 100 concurrent calls against a budget with room for 37 allow exactly 37,
// every time; the same for a rate limit, for a budget of decimal amounts, and for a call two counters
// select (all or nothing: a call refused by one counts in neither). One-counter calls are counted on
// the lanes (src/db/lanes.ts: several calls in one transaction), two-counter calls in transactions of
// the pool; a last test counts one-counter calls in the pool's transactions too (without lanes).
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql } from '../../src/db/connect.js';
import { createEngine, type Engine } from '../../src/engine/index.js';
import type { JsonObject } from '../../src/json/value.js';
import type { Identity } from '../../src/policy/model.js';
import { createTestParts, type TestEngineParts } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { callLog, decisionOf, settled } from '../helpers/engine.js';
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
const built: TestEngineParts[] = [];
const replicas: Engine[] = [];
/** The same two replicas without lanes: every counted call in a transaction of the pool. */
const poolReplicas: Engine[] = [];

/** A replica: an engine over a pool of its own, as a process would have. */
async function replica(name: string, lanes: boolean): Promise<Engine> {
  const sql = createSql(db.url, { max: 10, applicationName: name });
  const parts = await createTestParts({
    policyDir: dir,
    env: null,
    ...(lanes ? {} : { lanes: false as const }),
    database: { url: db.url, sql, drop: () => sql.end({ timeout: 5 }) },
  });
  built.push(parts);
  return createEngine(parts.parts);
}

beforeAll(async () => {
  [db, dir] = await Promise.all([createTestDatabase(), policyDir({ 'exact.yaml': POLICY })]);
  for (const name of ['replica-a', 'replica-b']) {
    replicas.push(await replica(name, true));
    poolReplicas.push(await replica(`${name}-pool`, false));
  }
}, 60_000);

afterAll(async () => {
  for (const b of built) {
    await b.close();
    await b.db?.drop();
  }
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** 100 calls at once, alternating between the two replicas. */
async function storm(
  request: (i: number) => { tool: string; args?: JsonObject },
  identity: Identity,
  engines = replicas,
): Promise<{ status: number; body: Record<string, unknown> }[]> {
  return Promise.all(
    Array.from({ length: CALLS }, async (_, i) => {
      const { tool, args = {} } = request(i);
      const answer = engines[i % 2]!.decide({
        request: { tool, args },
        identity,
        claim: () => undefined,
        log: callLog(),
      });
      return decisionOf(await settled(answer));
    }),
  );
}

function tally(answers: { status: number; body: Record<string, unknown> }[]): {
  allowed: number;
  refused: number;
  other: string[];
} {
  let allowed = 0;
  let refused = 0;
  const other: string[] = [];
  for (const a of answers) {
    if (a.status === 200 && a.body.decision === 'allow') allowed++;
    else if (a.status === 403 && a.body.decision !== 'allow') refused++;
    else other.push(`${a.status} ${JSON.stringify(a.body).slice(0, 200)}`);
  }
  return { allowed, refused, other };
}

/** A caller's identity, as its token's claims give it. */
const caller = (sub: string, team = 'support'): Identity => ({ user: sub, team, agent: 'bot', roles: [] });

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
      const result = tally(await storm(() => ({ tool: 'pay', args: { amount: 1 } }), caller(sub)));
      expect(result, `round ${round}`).toEqual({ allowed: 37, refused: 63, other: [] });
      expect(await counted('room-37', sub)).toBe('37');
    }
  });

  it(`a budget of decimal amounts (0.1 each, room for 3.7): exactly 37 allowed, ${ROUNDS} times over`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const sub = `tipper-${round}-${randomUUID().slice(0, 8)}`;
      const responses = await storm((i) => ({ tool: 'tip', args: { amount: 0.1, n: i } }), caller(sub));
      const result = tally(responses);
      expect(result, `round ${round}`).toEqual({ allowed: 37, refused: 63, other: [] });
      // Past the room, each asks an operator (nothing counted for those).
      expect(responses.filter((r) => r.status === 403).every((r) => r.body.rule === 'cents')).toBe(true);
      expect(await counted('cents', sub)).toBe('3.7');
    }
  });

  it(`a rate limit of 37 calls per hour: exactly 37 allowed, ${ROUNDS} times over`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const sub = `pinger-${round}-${randomUUID().slice(0, 8)}`;
      const result = tally(await storm(() => ({ tool: 'ping' }), caller(sub)));
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
        tally(await storm(() => ({ tool: 'pay', args: { amount: 1 } }), caller(sub), poolReplicas)),
        `budget, round ${round}`,
      ).toEqual({
        allowed: 37,
        refused: 63,
        other: [],
      });
      expect(await counted('room-37', sub)).toBe('37');
      expect(
        tally(await storm(() => ({ tool: 'ping' }), caller(sub), poolReplicas)),
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
      const result = tally(await storm(() => ({ tool: 'both' }), caller(sub, team)));
      expect(result, `round ${round}`).toEqual({ allowed: 37, refused: 63, other: [] });
      const [row] = await db.sql<
        { counted: string }[]
      >`select counted::text from budget_counters where budget = 'pair-b' and scope_key = ${`team:${team}`}`;
      // The 63 refused by pair-a counted in pair-b neither, though pair-b had room for them.
      expect(row?.counted).toBe('37');
    }
  });
});
