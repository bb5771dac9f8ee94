// gatehouse-pdp/client against a real Gatehouse on a loopback port (real PostgreSQL): the answers a host
// acts on, the approval loop (file, wait, grant over REST, redeem once), failing closed, 503 retried per
// Retry-After, a lost redeem retried under its Idempotency-Key (in the process and after a restart),
// a withdrawn wait, an approval that expires (reported, or filed again when asked), and the run view it keeps.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  createClient,
  fileMemory,
  type GatehouseClient,
  processMemory,
  type ToolCall,
} from '../../src/client/index.js';
import { callKey } from '../../src/client/memory.js';
import { agentToken, approverToken, createTestApp, type TestApp } from '../helpers/app.js';
import { startFaultProxy, startServer } from '../helpers/fault-proxy.js';
import { listenLoopback } from '../helpers/http.js';

const SUPPORT = agentToken('agent-7', { team: 'support' });
const OPERATOR = approverToken('operator-1');
const BIG_REFUND: ToolCall = { tool: 'refund', args: { order: 'A1', amount: 120 } };

let t: TestApp;
let url: string;
let dirs: string[] = [];

beforeAll(async () => {
  t = await createTestApp({ database: true, env: 'prod' });
  url = `http://127.0.0.1:${await listenLoopback(t.app)}`;
});
afterAll(async () => {
  await t.close();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  dirs = [];
});

const client = (o: Partial<Parameters<typeof createClient>[0]> = {}): GatehouseClient =>
  createClient({ url, token: SUPPORT, ...o });
const operator = (): GatehouseClient => createClient({ url, token: OPERATOR });
const tempDir = async (): Promise<string> => {
  const d = await mkdtemp(join(tmpdir(), 'gatehouse-client-'));
  dirs.push(d);
  return d;
};
/** A distinct call each test, so no test meets another's approval. */
let orders = 0;
const refund = (amount = 120): ToolCall => ({ tool: 'refund', args: { order: `C-${++orders}`, amount } });

/** Makes an approval lapse now, by the database clock (as APPROVAL_TTL or GRANT_TTL running out would). */
async function expire(id: string): Promise<void> {
  await t.db!.sql`update approvals set expires_at = now() - interval '1 second' where id = ${id}`;
}

/** Every approval filed in this run, oldest first: [id, status]. */
async function approvalsOf(runId: string): Promise<[string, string][]> {
  const page = await operator().approvals.list({ tool: 'refund', limit: 200 });
  return page.items
    .filter((a) => a.runId === runId)
    .reverse()
    .map((a) => [a.id, a.status]);
}

/** Resolves with the approval's id when gate() reports it pending. */
function pendingId(): { onPending: (p: { id: string }) => void; id: Promise<string> } {
  let resolve!: (id: string) => void;
  const id = new Promise<string>((r) => (resolve = r));
  return { onPending: (p) => resolve(p.id), id };
}

describe('decide', () => {
  it('answers the decision body for allow (200) and the refusals (403)', async () => {
    const c = client();
    expect((await c.decide({ tool: 'lookup_order', args: { order: 'A1' } })).decision).toBe('allow');
    expect((await c.decide({ tool: 'wipe_orders' })).decision).toBe('abort');
    const asks = await c.decide(BIG_REFUND);
    expect(asks.decision).toBe('require_approval');
    expect(asks.next).toEqual({ action: 'file', url: '/approvals' });
  });

  it('throws a GatehouseError with the problem code for what is not a decision', async () => {
    await expect(client({ token: 'not-a-jwt' }).decide(BIG_REFUND)).rejects.toMatchObject({
      name: 'GatehouseError',
      status: 401,
      code: 'unauthorized',
    });
  });

  it('refuses options it cannot work with', () => {
    expect(() => createClient({ url: 'ftp://x', token: 'x' })).toThrow(/url/);
    expect(() => createClient({ url })).toThrow(/token/);
  });
});

describe('gate', () => {
  it('allow, deny and abort come back as the server said them, with the model message', async () => {
    const c = client();
    const allowed = await c.gate({ tool: 'lookup_order', args: { order: 'A1' } });
    expect(allowed).toMatchObject({ decision: 'allow', message: 'The "lookup_order" action is allowed by policy.' });
    const denied = await createClient({ url, token: agentToken('agent-9', { team: 'sales' }) }).gate({
      tool: 'refund',
      args: { order: 'A1', amount: 40 },
    });
    expect(denied.decision).toBe('deny');
    expect(denied.message).toMatch(/^The "refund" action was not approved by policy/);
    const aborted = await c.gate({ tool: 'wipe_orders' });
    expect(aborted.decision).toBe('abort');
    expect(aborted.error).toBeUndefined();
  });

  it('files the approval, waits, and allows once an operator grants it over REST; the grant is consumed', async () => {
    const call = refund();
    const pending = pendingId();
    const result = client().gate(call, { runId: 'run-grant', onPending: pending.onPending });
    const id = await pending.id;
    const granted = await operator().approvals.grant(id, { note: 'looks fine' });
    expect(granted.status).toBe('granted');
    const final = await result;
    expect(final).toMatchObject({ decision: 'allow', approval: { id, status: 'consumed' } });
    const stored = await operator().approvals.get(id);
    expect(stored).toMatchObject({ status: 'consumed', runId: 'run-grant', args: call.args });
  });

  it('a grant amended by an operator: gate() allows the amended call, says what changed, and redeems with it', async () => {
    const call = refund(150);
    const pending = pendingId();
    const result = client().gate(call, { runId: 'run-amend', onPending: pending.onPending });
    const id = await pending.id;
    const amendedArgs = { order: `${(call.args as { order: string }).order}-b`, amount: 110 };
    const granted = await operator().approvals.grant(id, { note: 'less', args: amendedArgs });
    expect(granted).toMatchObject({ status: 'granted', amendedArgs, amendedBy: 'operator-1' });
    const final = await result;
    expect(final).toMatchObject({
      decision: 'allow',
      approval: { id, status: 'consumed' },
      amended: { args: amendedArgs, paths: ['amount', 'order'] },
    });
    // The call as asked never runs on it: the same call again is told to use the amended arguments.
    const again = await client().decide({ ...call, approvalId: id });
    expect(again.decision).not.toBe('allow');
  });

  it('an amended redeem whose answers are all lost: after a restart (fileMemory) it is sent again under its key, allowed once', async () => {
    const dir = await tempDir();
    const call = refund(170);
    const first = await client({ memory: fileMemory(dir) }).gate(call, { runId: 'run-amend-restart', maxWaitMs: 0 });
    const id = first.approval!.id;
    const amendedArgs = { ...(call.args as Record<string, unknown>), amount: 140 };
    await operator().approvals.grant(id, { args: amendedArgs });
    // Every answer to a redeem is lost (sent, consumed, then the connection reset): the process gives up.
    const losing: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (typeof init?.body === 'string' && init.body.includes('"approval_id"'))
        throw new TypeError('fetch failed: the connection was reset');
      return res;
    };
    const lost = await client({ memory: fileMemory(dir), fetch: losing }).gate(call, {
      runId: 'run-amend-restart',
      maxRetryMs: 0,
    });
    expect(lost.decision).not.toBe('allow');
    expect((await operator().approvals.get(id)).status).toBe('consumed');
    const after = await client({ memory: fileMemory(dir) }).gate(call, { runId: 'run-amend-restart' });
    expect(after).toMatchObject({
      decision: 'allow',
      approval: { id, status: 'consumed' },
      amended: { args: amendedArgs, paths: ['amount'] },
    });
  });

  it('a look reports the amendment of a grant; the use redeems the amended call', async () => {
    const c = client();
    const call = refund(130);
    const look = await c.gate(call, { runId: 'run-amend-look', maxWaitMs: 0, redeem: false });
    const id = look.approval!.id;
    await operator().approvals.grant(id, { args: { ...(call.args as Record<string, unknown>), amount: 101 } });
    const again = await c.gate(call, { runId: 'run-amend-look', maxWaitMs: 0, redeem: false });
    expect(again).toMatchObject({
      decision: 'require_approval',
      approval: { id, status: 'granted' },
      amended: { paths: ['amount'] },
    });
    const use = await c.gate(call, { runId: 'run-amend-look' });
    expect(use).toMatchObject({ decision: 'allow', amended: { args: { amount: 101 }, paths: ['amount'] } });
  });

  it("an operator denial reaches the model with its message, never the operators' note", async () => {
    const pending = pendingId();
    const result = client().gate(refund(), { onPending: pending.onPending });
    await operator().approvals.deny(await pending.id, {
      note: 'card flagged for chargebacks',
      message: 'the order was already refunded',
    });
    const final = await result;
    expect(final.decision).toBe('deny');
    expect(final.message).toContain('the order was already refunded');
    expect(final.message).not.toContain('chargebacks');
    expect(final.body?.decisionId).toEqual(expect.any(String));
  });

  it('the same call again within DENIED_COOLDOWN: deny `recently_denied`, with the operator message and not the note', async () => {
    const cooled = await createTestApp({ database: true, env: 'prod', deniedCooldownMs: 60_000 });
    try {
      const base = `http://127.0.0.1:${await listenLoopback(cooled.app)}`;
      const call = refund();
      const first = await createClient({ url: base, token: SUPPORT }).gate(call, { maxWaitMs: 0 });
      await createClient({ url: base, token: OPERATOR }).approvals.deny(first.approval!.id, {
        note: 'card flagged',
        message: 'duplicate of R-7',
      });
      // A new process: its memory holds nothing, so it files, and is told the call was just denied.
      const again = await createClient({ url: base, token: SUPPORT }).gate(call, { maxWaitMs: 0 });
      expect(again).toMatchObject({ decision: 'deny', error: { code: 'recently_denied' } });
      expect(again.message).toContain('Reason: duplicate of R-7.');
      expect(again.message).not.toContain('card flagged');
    } finally {
      await cooled.close();
    }
  });

  it('a wait that ends unanswered resolves require_approval with the id and status; asking again reuses that approval', async () => {
    const c = client();
    const call = refund();
    const first = await c.gate(call, { runId: 'run-twice', maxWaitMs: 0 });
    expect(first.decision).toBe('require_approval');
    expect(first.approval?.status).toBe('pending');
    const second = await c.gate(call, { runId: 'run-twice', maxWaitMs: 0 });
    expect(second.approval?.id).toBe(first.approval?.id);
    const mine = await c.approvals.list({ tool: 'refund', status: 'pending' });
    expect(mine.items.filter((a) => a.id === first.approval?.id)).toHaveLength(1);
    expect(mine.items.filter((a) => a.runId === 'run-twice')).toHaveLength(1);
  });

  it('aborting the wait withdraws the approval', async () => {
    const abort = new AbortController();
    const pending = pendingId();
    const result = client().gate(refund(), { signal: abort.signal, onPending: pending.onPending });
    const id = await pending.id;
    abort.abort();
    const final = await result;
    expect(final).toMatchObject({ decision: 'require_approval', approval: { id, status: 'cancelled' } });
    expect((await operator().approvals.get(id)).status).toBe('cancelled');
  });

  it('a look (redeem: false) reports a grant without using it and records no step; the use then redeems that approval', async () => {
    const c = client();
    const call = refund();
    const look = await c.gate(call, { runId: 'run-look', maxWaitMs: 0, redeem: false });
    expect(look.approval?.status).toBe('pending');
    await operator().approvals.grant(look.approval!.id);
    const again = await c.gate(call, { runId: 'run-look', maxWaitMs: 0, redeem: false });
    expect(again).toMatchObject({
      decision: 'require_approval',
      approval: { id: look.approval!.id, status: 'granted' },
    });
    expect((await operator().approvals.get(look.approval!.id)).status).toBe('granted');
    const use = await c.gate(call, { runId: 'run-look' });
    expect(use).toMatchObject({ decision: 'allow', approval: { id: look.approval!.id, status: 'consumed' } });
  });

  it("onAbort 'keep': an abort stops the wait and leaves the approval pending", async () => {
    const abort = new AbortController();
    const pending = pendingId();
    const result = client().gate(refund(), { signal: abort.signal, onAbort: 'keep', onPending: pending.onPending });
    const id = await pending.id;
    abort.abort();
    expect(await result).toMatchObject({ decision: 'require_approval', approval: { id, status: 'pending' } });
    expect((await operator().approvals.get(id)).status).toBe('pending');
  });

  it('survives a restart: a new process with the same file memory waits on and redeems the same approval', async () => {
    const dir = await tempDir();
    const call = refund();
    const before = await client({ memory: fileMemory(dir) }).gate(call, { runId: 'run-restart', maxWaitMs: 0 });
    const id = before.approval?.id;
    expect(id).toBeTypeOf('string');
    await operator().approvals.grant(id!);
    const after = await client({ memory: fileMemory(dir) }).gate(call, { runId: 'run-restart' });
    expect(after).toMatchObject({ decision: 'allow', approval: { id, status: 'consumed' } });
  });

  it("a memory entry naming another call's pending approval: never waited on, reported or withdrawn; this call files its own", async () => {
    const other = await client().gate(refund(), { runId: 'run-planted', maxWaitMs: 0 });
    const otherId = other.approval!.id;
    const call = refund();
    const memory = processMemory();
    await memory.set(await callKey('run-planted', call), JSON.stringify({ id: otherId }));
    const heard: string[] = [];
    const abort = new AbortController();
    const result = client({ memory }).gate(call, {
      runId: 'run-planted',
      signal: abort.signal,
      onPending: (p) => heard.push(p.id),
    });
    await vi.waitFor(() => expect(heard.length).toBeGreaterThan(0), { timeout: 10_000 });
    abort.abort();
    const own = (await result).approval!.id;
    expect(own).not.toBe(otherId);
    expect(heard.every((id) => id === own)).toBe(true);
    expect(await operator().approvals.get(own)).toMatchObject({ status: 'cancelled', tool: 'refund', args: call.args });
    expect((await operator().approvals.get(otherId)).status).toBe('pending');
  });

  it('keeps the run view: the steps it allowed count against the policy limits of the run', async () => {
    const limits = await createTestApp({ policyDir: 'test/cases/limits' });
    try {
      const c = createClient({ url: `http://127.0.0.1:${await listenLoopback(limits.app)}`, token: SUPPORT });
      const decisions = [];
      for (let i = 0; i < 3; i++) decisions.push((await c.gate({ tool: 'lookup' }, { runId: 'run-limits' })).decision);
      expect(decisions).toEqual(['allow', 'allow', 'abort']);
      expect((await c.gate({ tool: 'lookup' }, { runId: 'another-run' })).decision).toBe('allow');
    } finally {
      await limits.close();
    }
  });
});

describe('an approval that expires', () => {
  const UNANSWERED =
    'The "refund" action was not run: it needs an operator\'s approval (refund over 100 needs an operator), and the approval requested for it expired before an operator answered. Tell the user; if the action is still wanted, make the same call again to request a new approval.';
  const UNUSED =
    'The "refund" action was not run: it needs an operator\'s approval (refund over 100 needs an operator), and an operator granted its approval, but the grant expired before the call could use it. Tell the user; if the action is still wanted, make the same call again to request a new approval.';

  it('while gate() waits: reported as expired with a message saying so; no second approval is filed', async () => {
    const c = client();
    const call = refund();
    const pending = pendingId();
    const result = c.gate(call, { runId: 'run-expiry', onPending: pending.onPending });
    const id = await pending.id;
    await expire(id);
    const final = await result;
    expect(final).toMatchObject({
      decision: 'require_approval',
      message: UNANSWERED,
      approval: { id, status: 'expired' },
    });
    expect(final.error).toBeUndefined();
    expect(await approvalsOf('run-expiry')).toEqual([[id, 'expired']]);
    // Forgotten: the same call made again is a new request, with a new approval.
    const again = await c.gate(call, { runId: 'run-expiry', maxWaitMs: 0 });
    expect(again.approval?.status).toBe('pending');
    expect(again.approval?.id).not.toBe(id);
    expect(await approvalsOf('run-expiry')).toEqual([
      [id, 'expired'],
      [again.approval!.id, 'pending'],
    ]);
  });

  it('found expired by a later gate() (the wait had ended pending): reported, not filed again', async () => {
    const c = client();
    const call = refund();
    const first = await c.gate(call, { runId: 'run-expiry-later', maxWaitMs: 0 });
    await expire(first.approval!.id);
    const later = await c.gate(call, { runId: 'run-expiry-later', maxWaitMs: 0 });
    expect(later).toMatchObject({
      decision: 'require_approval',
      message: UNANSWERED,
      approval: { id: first.approval!.id, status: 'expired' },
    });
    expect(await approvalsOf('run-expiry-later')).toEqual([[first.approval!.id, 'expired']]);
  });

  it('a grant that lapses before the call uses it: reported as such', async () => {
    const c = client();
    const call = refund();
    const look = await c.gate(call, { runId: 'run-grant-lapsed', maxWaitMs: 0, redeem: false });
    await operator().approvals.grant(look.approval!.id);
    await expire(look.approval!.id);
    const use = await c.gate(call, { runId: 'run-grant-lapsed' });
    expect(use).toMatchObject({
      decision: 'require_approval',
      message: UNUSED,
      approval: { id: look.approval!.id, status: 'expired' },
    });
    expect(await approvalsOf('run-grant-lapsed')).toEqual([[look.approval!.id, 'expired']]);
  });

  it('a grant that lapses between the read and the redeem: the redeem is answered expired, and that is reported', async () => {
    let lapsed = 0;
    const c = client({
      fetch: async (input, init) => {
        const body = typeof init?.body === 'string' ? init.body : '';
        const cited = /"approval_id":"([0-9a-f-]{36})"/.exec(body)?.[1];
        if (cited !== undefined && lapsed++ === 0) await expire(cited);
        return fetch(input, init);
      },
    });
    const call = refund();
    const look = await c.gate(call, { runId: 'run-redeem-lapsed', maxWaitMs: 0, redeem: false });
    await operator().approvals.grant(look.approval!.id);
    const use = await c.gate(call, { runId: 'run-redeem-lapsed' });
    expect(lapsed).toBe(1);
    expect(use).toMatchObject({
      decision: 'require_approval',
      message: UNUSED,
      approval: { id: look.approval!.id, status: 'expired' },
    });
    expect(await approvalsOf('run-redeem-lapsed')).toEqual([[look.approval!.id, 'expired']]);
  });

  it("onExpired 'refile': a new approval is filed and waited on; granted, the call is allowed", async () => {
    const c = client();
    const ids: string[] = [];
    const filed = [pendingId(), pendingId()];
    const result = c.gate(refund(), {
      runId: 'run-refile',
      onExpired: 'refile',
      onPending: (p) => {
        if (!ids.includes(p.id)) filed[ids.push(p.id) - 1]?.onPending(p);
      },
    });
    const first = await filed[0]!.id;
    await expire(first);
    const second = await filed[1]!.id;
    expect(second).not.toBe(first);
    await operator().approvals.grant(second);
    expect(await result).toMatchObject({ decision: 'allow', approval: { id: second, status: 'consumed' } });
    expect(await approvalsOf('run-refile')).toEqual([
      [first, 'expired'],
      [second, 'consumed'],
    ]);
  });
});

describe('failing closed', () => {
  it('an unreachable Gatehouse is a deny carrying the error, never allow', async () => {
    const dead = createServer();
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
    const port = (dead.address() as AddressInfo).port;
    await new Promise<void>((r) => dead.close(() => r()));
    const result = await createClient({ url: `http://127.0.0.1:${port}`, token: SUPPORT }).gate({
      tool: 'lookup_order',
      args: { order: 'A1' },
    });
    expect(result.decision).toBe('deny');
    expect(result.error?.code).toBe('unreachable');
    expect(result.message).toMatch(/was not run/);
  });

  it('an answer that is not a decision is a deny (a 200 that says deny, a 500)', async () => {
    for (const [status, body] of [
      [200, '{"decision":"deny","message":"m"}'],
      [200, '{"decision":"allow"}'],
      [500, '{"code":"internal"}'],
      [200, 'not json'],
    ] as const) {
      const liar = await startServer((_req, res) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(body);
      });
      try {
        const result = await createClient({ url: liar.url, token: SUPPORT }).gate({ tool: 'lookup_order' });
        expect(result.decision, body).toBe('deny');
        expect(result.error?.code).toMatch(/bad_answer|http_500|internal/);
      } finally {
        await liar.close();
      }
    }
  });

  it('without approvals configured (503), a call that needs one is refused once the retries are over', async () => {
    const bare = await createTestApp();
    try {
      const c = createClient({ url: `http://127.0.0.1:${await listenLoopback(bare.app)}`, token: SUPPORT });
      const result = await c.gate(refund(), { maxWaitMs: 100, maxRetryMs: 0 });
      expect(result.decision).toBe('deny');
      expect(result.error?.code).toBe('unavailable');
    } finally {
      await bare.close();
    }
  });

  it('a 503 is retried after its Retry-After while the wait allows', async () => {
    let refused = 0;
    const proxy = await startFaultProxy(url, (req) =>
      req.url === '/decide' && refused++ === 0 ? 'unavailable' : 'forward',
    );
    try {
      const result = await createClient({ url: proxy.url, token: SUPPORT }).gate(
        { tool: 'lookup_order', args: { order: 'A1' } },
        { maxWaitMs: 5000 },
      );
      expect(result.decision).toBe('allow');
      expect(refused).toBe(2);
    } finally {
      await proxy.close();
    }
  });

  it('a look that files and returns (maxWaitMs 0) retries a 503 too, within maxRetryMs', async () => {
    let refused = 0;
    const proxy = await startFaultProxy(url, (req) =>
      req.url === '/approvals' && refused++ === 0 ? 'unavailable' : 'forward',
    );
    try {
      const result = await createClient({ url: proxy.url, token: SUPPORT }).gate(refund(), {
        maxWaitMs: 0,
        redeem: false,
      });
      expect(result).toMatchObject({ decision: 'require_approval', approval: { status: 'pending' } });
      expect(proxy.seen.filter((s) => s.url === '/approvals')).toHaveLength(2);
    } finally {
      await proxy.close();
    }
  });

  it('a 503 that outlasts maxRetryMs is a deny carrying `unavailable`, after the retries it allowed', async () => {
    const proxy = await startFaultProxy(url, () => 'unavailable');
    try {
      const result = await createClient({ url: proxy.url, token: SUPPORT }).gate(
        { tool: 'lookup_order', args: { order: 'A1' } },
        { maxWaitMs: 0, maxRetryMs: 2500 },
      );
      expect(result).toMatchObject({ decision: 'deny', error: { code: 'unavailable' } });
      // Retry-After: 1 within 2.5 s: retried, and never more than twice (a third would start past the bound).
      expect(proxy.seen.length).toBeGreaterThanOrEqual(2);
      expect(proxy.seen.length).toBeLessThanOrEqual(3);
    } finally {
      await proxy.close();
    }
  });
});

describe('a redeem whose answer is lost', () => {
  it('is retried with the same Idempotency-Key and reads the kept allow: the grant is not burnt', async () => {
    let cut = 0;
    const proxy = await startFaultProxy(url, (_req, body) =>
      body.includes('"approval_id"') && cut++ === 0 ? 'lose-answer' : 'forward',
    );
    try {
      const pending = pendingId();
      const result = createClient({ url: proxy.url, token: SUPPORT }).gate(refund(), { onPending: pending.onPending });
      const id = await pending.id;
      await operator().approvals.grant(id);
      expect(await result).toMatchObject({ decision: 'allow', approval: { id, status: 'consumed' } });
      const redeems = proxy.seen.filter((s) => s.body.includes('"approval_id"'));
      expect(redeems).toHaveLength(2);
      expect(redeems[0]!.key).toMatch(/^gatehouse-client:/);
      expect(redeems[1]!.key).toBe(redeems[0]!.key);
      expect(redeems[1]!.body).toBe(redeems[0]!.body);
      expect(proxy.replayed).toBe(1);
    } finally {
      await proxy.close();
    }
  });

  it('after a restart too: the stored attempt is sent again as it was, and the call is allowed', async () => {
    const dir = await tempDir();
    let losing = true;
    const proxy = await startFaultProxy(url, (_req, body) =>
      body.includes('"approval_id"') && losing ? 'lose-answer' : 'forward',
    );
    try {
      const call = refund();
      const first = await createClient({ url: proxy.url, token: SUPPORT, memory: fileMemory(dir) }).gate(call, {
        runId: 'r',
        maxWaitMs: 0,
      });
      await operator().approvals.grant(first.approval!.id);
      // Every answer to the redeem is lost: the process gives up, failing closed.
      const lost = await createClient({ url: proxy.url, token: SUPPORT, memory: fileMemory(dir) }).gate(call, {
        runId: 'r',
        maxWaitMs: 5000,
      });
      expect(lost.decision).toBe('deny');
      expect(lost.error?.code).toBe('unreachable');
      expect((await operator().approvals.get(first.approval!.id)).status).toBe('consumed');
      losing = false;
      const resumed = await createClient({ url: proxy.url, token: SUPPORT, memory: fileMemory(dir) }).gate(call, {
        runId: 'r',
      });
      expect(resumed).toMatchObject({ decision: 'allow', approval: { id: first.approval!.id, status: 'consumed' } });
      // The memory forgets a settled call: the same call again needs a new approval.
      const again = await createClient({ url: proxy.url, token: SUPPORT, memory: fileMemory(dir) }).gate(call, {
        runId: 'r',
        maxWaitMs: 0,
      });
      expect(again.decision).toBe('require_approval');
      expect(again.approval?.id).not.toBe(first.approval!.id);
    } finally {
      await proxy.close();
    }
  });
});
