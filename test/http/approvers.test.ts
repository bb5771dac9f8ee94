// Who may answer an approval and how many (docs/spec.md sections 2.4, 5.4 and 5.8), over HTTP against a
// real PostgreSQL: eligibility by role, team and user, separation from the requester's team, quorum of
// distinct approvers, one answer per person, 403 not_eligible, `eligible=true`, the webhook events, and
// races between two app instances on one database.
import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql } from '../../src/db/connect.js';
import { slackBody, type WebhookEndpoint } from '../../src/webhooks/events.js';
import { bearer, createTestApp, post, token, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { assertResponseMatchesOpenApi } from '../helpers/openapi.js';
import { runs } from '../helpers/runs.js';
import { webhookSecret } from '../helpers/webhook-receiver.js';

const DIR = 'test/fixtures/policies/approvers';
const TWO = 'test/fixtures/policies/approvers-two';
// Events are only queued (no worker): the outbox table is what the tests read.
const ENDPOINT: WebhookEndpoint = {
  name: 'hooks',
  url: 'http://127.0.0.1:9/',
  format: 'standard',
  secret: webhookSecret(),
  events: null,
};

let db: TestDatabase;
let a: TestApp;
let b: TestApp;
let two: TestApp;
let pool: Sql;
beforeAll(async () => {
  db = await createTestDatabase();
  const webhooks = { endpoints: [ENDPOINT], worker: false };
  a = await createTestApp({ policyDir: DIR, env: null, database: db, webhooks });
  // A second replica on the same database, with its own pool (and LISTEN connection).
  pool = createSql(db.url);
  b = await createTestApp({
    policyDir: DIR,
    env: null,
    database: { url: db.url, sql: pool, drop: async () => {} },
    webhooks,
  });
  two = await createTestApp({ policyDir: TWO, env: null, database: db, webhooks });
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close(), two?.close()]);
  await pool?.end({ timeout: 5 });
  await db?.drop();
});

interface Body {
  id: string;
  status: string;
  decided_by: string | null;
  grants: { by: string; name: string | null; at: string; note: string | null }[];
  requirements: {
    rule: string;
    approvers: Record<string, string[]> | null;
    quorum: number;
    separate_from_requester: string;
    granted: string[];
  }[];
}

let seq = 0;
const uniq = (label: string): string => `${label}-${++seq}-${randomUUID().slice(0, 8)}`;
/** A person with the approver role and these roles and team. */
const person = (sub: string, team: string | null, roles: string[] = []): string =>
  token({ sub, ...(team === null ? { team: undefined } : { team }), roles: ['approver', ...roles] });
const requester = (sub = uniq('agent')): string => token({ sub, team: 'support', agent: 'bot' });

async function file(tool: string, app: TestApp = a, tok = requester()): Promise<Body> {
  const res = await post(app.app, '/approvals', { tool, args: { n: ++seq } }, tok);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as Body;
}
const grant = (id: string, tok: string, app: TestApp = a, note = 'ok') =>
  post(app.app, `/approvals/${id}/grant`, { note }, tok);
const deny = (id: string, tok: string, app: TestApp = a) =>
  post(app.app, `/approvals/${id}/deny`, { note: 'no', message: 'not now' }, tok);
const read = async (id: string, app: TestApp = a): Promise<Body> => {
  const res = await app.app.inject({
    method: 'GET',
    url: `/approvals/${id}`,
    headers: bearer(person('reader', 'ops')),
  });
  expect(res.statusCode).toBe(200);
  return res.json() as Body;
};
const events = async (id: string): Promise<string[]> =>
  (await db.sql<{ type: string }[]>`select type from webhook_outbox where approval_id = ${id} order by id`).map(
    (r) => r.type,
  );

describe('eligibility', () => {
  it('the approval shows who may answer each requirement, how many must, and who has', async () => {
    const filed = await file('refund');
    expect(filed.grants).toEqual([]);
    expect(filed.requirements).toEqual([
      expect.objectContaining({
        rule: 'refund-two',
        approvers: { roles: ['finance'] },
        quorum: 2,
        separate_from_requester: 'team',
        granted: [],
      }),
    ]);
    const plain = await file('send_note');
    expect(plain.requirements[0]).toMatchObject({
      approvers: null,
      quorum: 1,
      separate_from_requester: 'none',
      granted: [],
    });
  });

  it('by role: an approver without a listed role is 403 not_eligible naming the rule and why; the approval stays pending', async () => {
    const { id } = await file('refund');
    const res = await grant(id, person(uniq('op'), 'finance'));
    expect(res.statusCode).toBe(403);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    assertResponseMatchesOpenApi('POST', `/approvals/${id}/grant`, res);
    const body = res.json();
    expect(body).toMatchObject({
      code: 'not_eligible',
      status: 403,
      requirements: [{ rule: 'refund-two', policy: 'approvers', why: ['role'] }],
    });
    expect(body.detail).toMatch(/refund-two/);
    expect(body.detail).toMatch(/role/);
    expect((await read(id)).status).toBe('pending');
    expect((await deny(id, person(uniq('op'), 'finance'))).statusCode).toBe(403);
    expect((await read(id)).status).toBe('pending');
    expect(await events(id)).toEqual(['approval.created']);
  });

  it('by team: only an approver of a listed team; one without a team is not eligible', async () => {
    const { id } = await file('pay_vendor');
    const outsider = await grant(id, person(uniq('op'), 'ops'));
    expect(outsider.statusCode).toBe(403);
    expect(outsider.json().requirements).toEqual([{ rule: 'vendor-risk', policy: 'approvers', why: ['team'] }]);
    expect((await grant(id, person(uniq('op'), null))).statusCode).toBe(403);
    const ok = await grant(id, person(uniq('op'), 'risk'));
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toMatchObject({ status: 'granted' });
  });

  it('by user: only a listed sub', async () => {
    const { id } = await file('wire');
    const other = await grant(id, person(uniq('op'), 'ops'));
    expect(other.statusCode).toBe(403);
    expect(other.json().requirements[0].why).toEqual(['user']);
    const cfo = await grant(id, person('cfo', 'ops'));
    expect(cfo.statusCode, cfo.body).toBe(200);
    expect(cfo.json()).toMatchObject({ status: 'granted', decided_by: 'cfo' });
  });

  it('separation: no approver of the requester’s team, even with the role', async () => {
    const { id } = await file('refund');
    const same = await grant(id, person(uniq('op'), 'support', ['finance']));
    expect(same.statusCode).toBe(403);
    expect(same.json().requirements[0].why).toEqual(['separation']);
    const both = await grant(id, person(uniq('op'), 'support'));
    expect(both.json().requirements[0].why).toEqual(['role', 'separation']);
    expect((await grant(id, person(uniq('op'), null, ['finance']))).statusCode).toBe(403);
  });

  it('the requester itself never answers its own approval, approver role or not', async () => {
    const sub = uniq('self');
    const { id } = await file('send_note', a, token({ sub, team: 'support', roles: ['approver'] }));
    const res = await grant(id, token({ sub, team: 'ops', roles: ['approver'] }));
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('forbidden');
    expect((await deny(id, token({ sub, team: 'ops', roles: ['approver'] }))).statusCode).toBe(403);
  });

  it("a catalogue entry's approval block narrows confirm's requirement", async () => {
    const { id, requirements } = await file('close_account');
    expect(requirements[0]).toMatchObject({ approvers: { teams: ['risk'] }, quorum: 2 });
    expect((await grant(id, person(uniq('op'), 'ops'))).statusCode).toBe(403);
    expect((await grant(id, person(uniq('op'), 'risk'))).json()).toMatchObject({ status: 'pending' });
    expect((await grant(id, person(uniq('op'), 'risk'))).json()).toMatchObject({ status: 'granted' });
  });
});

describe('quorum', () => {
  const finance = (): string => person(uniq('fin'), 'finance', ['finance']);

  it('two distinct eligible approvers: pending with one grant, granted with the second; events partially_granted then granted', async () => {
    const { id } = await file('refund');
    const first = finance();
    const r1 = await grant(id, first, a, 'looks right');
    expect(r1.statusCode, r1.body).toBe(200);
    assertResponseMatchesOpenApi('POST', `/approvals/${id}/grant`, r1);
    const after1 = r1.json() as Body;
    expect(after1.status).toBe('pending');
    expect(after1.decided_by).toBeNull();
    expect(after1.grants).toEqual([
      { by: expect.stringMatching(/^fin-/), name: null, at: expect.any(String), note: 'looks right' },
    ]);
    expect(after1.requirements[0]!.granted).toEqual([after1.grants[0]!.by]);
    expect(await events(id)).toEqual(['approval.created', 'approval.partially_granted']);

    const r2 = await grant(id, finance(), b);
    expect(r2.statusCode, r2.body).toBe(200);
    const after2 = r2.json() as Body;
    expect(after2.status).toBe('granted');
    expect(after2.grants).toHaveLength(2);
    expect(after2.decided_by).toBe(after2.grants[1]!.by);
    expect(after2.requirements[0]!.granted).toEqual(after2.grants.map((g) => g.by));
    expect(await events(id)).toEqual(['approval.created', 'approval.partially_granted', 'approval.granted']);
    // The partial event carries the grant; the granted one the approval as decided.
    const [partial] = await db.sql<{ data: string }[]>`
      select data from webhook_outbox where approval_id = ${id} and type = 'approval.partially_granted'`;
    expect(JSON.parse(partial!.data)).toMatchObject({
      id,
      status: 'pending',
      grant: { by: after1.grants[0]!.by, name: null, note: 'looks right' },
    });
    // As a Slack message: who granted, and the note.
    const slack = JSON.parse(
      slackBody({ id: randomUUID(), type: 'approval.partially_granted', createdAt: new Date(), data: partial!.data }),
    ) as { text: string };
    expect(slack.text).toContain(`more grants needed) by ${after1.grants[0]!.by}*`);
    expect(slack.text).toContain('Note: looks right');
    // A grant after it is decided: 409 as ever.
    const late = await grant(id, finance());
    expect(late.statusCode).toBe(409);
    expect(late.json()).toMatchObject({ code: 'conflict', approval: { status: 'granted' } });
  });

  it('the same approver granting twice counts once: 200 and the approval unchanged', async () => {
    const { id } = await file('refund');
    const same = finance();
    const first = (await grant(id, same)).json() as Body;
    const again = await grant(id, same, b, 'again');
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first);
    expect((await read(id)).grants).toHaveLength(1);
    expect(await events(id)).toEqual(['approval.created', 'approval.partially_granted']);
  });

  it('an approver who granted may still deny before the quorum: one eligible denial denies it', async () => {
    const { id } = await file('refund');
    const same = finance();
    await grant(id, same);
    const res = await deny(id, same, b);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ status: 'denied', decision_message: 'not now' });
    expect((await grant(id, finance())).statusCode).toBe(409);
    expect(await events(id)).toEqual(['approval.created', 'approval.partially_granted', 'approval.denied']);
  });

  it('a grant counts toward every requirement its approver may answer', async () => {
    const { id, requirements } = await file('refund', two);
    expect(requirements.map((r) => [r.rule, r.quorum])).toEqual([
      ['treasury-cfo', 1],
      ['finance-two', 2],
    ]);
    // The cfo holds the finance role: one grant counts toward both.
    const cfo = (await grant(id, person('cfo', 'exec', ['finance']), two)).json() as Body;
    expect(cfo.status).toBe('pending');
    expect(cfo.requirements.map((r) => r.granted)).toEqual([['cfo'], ['cfo']]);
    // Eligible for the second only, which still needs one more.
    const fin = (await grant(id, finance(), two)).json() as Body;
    expect(fin.status).toBe('granted');
    expect(fin.requirements[1]!.granted).toHaveLength(2);
    expect(fin.requirements[0]!.granted).toEqual(['cfo']);
  });

  it('403 not_eligible names only the requirements still open (short of their quorum)', async () => {
    const { id } = await file('refund', two);
    // The cfo without the finance role: treasury-cfo has its quorum, finance-two is still open.
    expect((await grant(id, person('cfo', 'exec'), two)).json()).toMatchObject({ status: 'pending' });
    const res = await grant(id, person(uniq('op'), 'ops'), two);
    expect(res.statusCode).toBe(403);
    expect(res.json().requirements).toEqual([{ rule: 'finance-two', policy: 'finance', why: ['role'] }]);
  });
});

describe('GET /approvals?eligible=true', () => {
  it('lists the pending approvals the caller may answer an open requirement of and has not granted', async () => {
    const fin = person(uniq('fin'), 'finance', ['finance']);
    const refund = await file('refund');
    const vendor = await file('pay_vendor');
    const note = await file('send_note');
    const list = async (tok: string): Promise<string[]> => {
      const res = await a.app.inject({
        method: 'GET',
        url: '/approvals?eligible=true&status=pending&limit=200',
        headers: bearer(tok),
      });
      expect(res.statusCode, res.body).toBe(200);
      assertResponseMatchesOpenApi('GET', '/approvals?eligible=true&status=pending&limit=200', res);
      return (res.json() as { items: { id: string }[] }).items.map((i) => i.id);
    };
    const mine = await list(fin);
    expect(mine).toEqual(expect.arrayContaining([refund.id, note.id]));
    expect(mine).not.toContain(vendor.id);
    const risk = await list(person(uniq('op'), 'risk'));
    expect(risk).toEqual(expect.arrayContaining([vendor.id, note.id]));
    expect(risk).not.toContain(refund.id);
    // Granted by them: gone from their list, still in another's.
    await grant(refund.id, fin);
    expect(await list(fin)).not.toContain(refund.id);
    expect(await list(person(uniq('fin'), 'finance', ['finance']))).toContain(refund.id);
    // Decided: gone from everyone's.
    await grant(note.id, fin);
    expect(await list(person(uniq('op'), 'risk'))).not.toContain(note.id);
    // A caller without the approver role is eligible for nothing.
    expect(await list(token({ sub: uniq('agent'), team: 'finance', roles: ['finance'] }))).toEqual([]);
  });

  it('is refused when it is not a boolean', async () => {
    const res = await a.app.inject({
      method: 'GET',
      url: '/approvals?eligible=maybe',
      headers: bearer(person('x', 'ops')),
    });
    expect(res.statusCode).toBe(400);
  });
});

describe('races across two replicas', () => {
  it('many concurrent grants reach the quorum exactly once: one approval.granted event', async () => {
    for (let round = 0; round < runs(4); round++) {
      const { id } = await file('refund');
      const people = Array.from({ length: 8 }, () => person(uniq('fin'), 'finance', ['finance']));
      const answers = await Promise.all(people.map((p, i) => grant(id, p, i % 2 === 0 ? a : b)));
      const codes = answers.map((r) => r.statusCode).sort();
      // Two grants count; the others find it granted (409).
      expect(codes.filter((c) => c === 200)).toHaveLength(2);
      expect(codes.filter((c) => c === 409)).toHaveLength(6);
      const final = await read(id, b);
      expect(final.status).toBe('granted');
      expect(final.grants).toHaveLength(2);
      // The last grant, in the order they counted, is the one that completed the quorum.
      expect(final.decided_by).toBe(final.grants[1]!.by);
      const types = await events(id);
      expect(types.filter((t) => t === 'approval.granted')).toHaveLength(1);
      expect(types.filter((t) => t === 'approval.partially_granted')).toHaveLength(1);
    }
  });

  it('one approver granting on both replicas at once counts once: both 200, one grant', async () => {
    for (let round = 0; round < runs(6); round++) {
      const { id } = await file('refund');
      const same = person(uniq('fin'), 'finance', ['finance']);
      const answers = await Promise.all([grant(id, same, a), grant(id, same, b), grant(id, same, a)]);
      expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200]);
      const final = await read(id);
      expect(final.status).toBe('pending');
      expect(final.grants).toHaveLength(1);
      expect((await events(id)).filter((t) => t === 'approval.partially_granted')).toHaveLength(1);
    }
  });

  it('a grant racing a denial has one winner', async () => {
    for (let round = 0; round < runs(6); round++) {
      const { id } = await file('send_note');
      const [g, d] = await Promise.all([
        grant(id, person(uniq('op'), 'ops'), a),
        deny(id, person(uniq('op'), 'ops'), b),
      ]);
      expect([g.statusCode, d.statusCode].sort()).toEqual([200, 409]);
      const final = await read(id);
      expect(final.status).toBe(g.statusCode === 200 ? 'granted' : 'denied');
      const types = await events(id);
      expect(types.filter((t) => t === 'approval.granted' || t === 'approval.denied')).toHaveLength(1);
    }
  });

  it('under a quorum, the second grant racing a denial has one winner too', async () => {
    for (let round = 0; round < runs(6); round++) {
      const { id } = await file('refund');
      await grant(id, person(uniq('fin'), 'finance', ['finance']));
      const [g, d] = await Promise.all([
        grant(id, person(uniq('fin'), 'finance', ['finance']), a),
        deny(id, person(uniq('fin'), 'finance', ['finance']), b),
      ]);
      expect([g.statusCode, d.statusCode].sort()).toEqual([200, 409]);
      expect((await read(id)).status).toBe(g.statusCode === 200 ? 'granted' : 'denied');
    }
  });
});
