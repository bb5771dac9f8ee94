// People by name (docs/spec.md section 5.2): the display name a token gives (`name`, else
// `preferred_username`, else `email`) joins the identity, GET /me, the approval's requester, the
// stream and the list's search; a name that could pass for another is passed over, never refused.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayName, identityFromClaims } from '../../src/policy/claims.js';
import { approverToken, bearer, createTestApp, post, token, type TestApp } from '../helpers/app.js';
import { listenLoopback } from '../helpers/http.js';
import { openStream } from '../helpers/sse.js';

const NAMES = { team: 'team', agent: 'agent', roles: 'roles' };

describe('the display name of claims', () => {
  it.each([
    [{ name: 'Ada Lovelace', preferred_username: 'ada', email: 'ada@example.com' }, 'Ada Lovelace'],
    [{ preferred_username: 'ada', email: 'ada@example.com' }, 'ada'],
    [{ email: 'ada@example.com' }, 'ada@example.com'],
    [{ name: '  Ada  ' }, 'Ada'],
    // Not usable: the next claim, or none. A name is a label; the token still authenticates by `sub`.
    [{ name: '', preferred_username: 'ada' }, 'ada'],
    [{ name: 42, email: 'ada@example.com' }, 'ada@example.com'],
    [{ name: 'Ada\u202Eecila', preferred_username: 'ada' }, 'ada'],
    [{ name: 'Ada\u200B', preferred_username: 'ada' }, 'ada'],
    [{ name: 'Ada\nLovelace' }, null],
    [{ name: 'x'.repeat(257) }, null],
    [{ name: '\uD800' }, null],
    [{}, null],
  ])('%j gives %j', (claims, expected) => {
    expect(displayName(claims)).toBe(expected);
    const identity = identityFromClaims({ sub: 'u-1', ...claims }, NAMES);
    expect(identity.user).toBe('u-1');
    expect(identity.name).toBe(expected ?? undefined);
  });
});

describe('names over HTTP, on a real PostgreSQL', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp({ env: 'prod', database: true });
    base = `http://127.0.0.1:${await listenLoopback(t.app)}`;
  });
  afterAll(async () => t?.close());

  const refund = (order: string) => ({ tool: 'refund', args: { order, amount: 120, note: 'twice' } });

  it('GET /me says the name; a token without one says null', async () => {
    const named = await t.app.inject({
      method: 'GET',
      url: '/me',
      headers: bearer(token({ sub: 'op-n', name: 'Ada' })),
    });
    expect(named.json()).toMatchObject({ sub: 'op-n', name: 'Ada' });
    const bare = await t.app.inject({ method: 'GET', url: '/me', headers: bearer(token({ sub: 'op-b' })) });
    expect(bare.json()).toMatchObject({ sub: 'op-b', name: null });
  });

  it("an approval keeps its requester's name: filed, read, listed, searched and streamed", async () => {
    const sub = `agent-${randomUUID()}`;
    const marker = `Refund Bot ${randomUUID().slice(0, 8)}`;
    const stream = await openStream(`${base}/approvals/stream`, approverToken());
    try {
      await stream.next((e) => e.event === 'ready');
      const filed = await post(t.app, '/approvals', refund('N-1'), token({ sub, team: 'support', name: marker }));
      expect(filed.statusCode, filed.body).toBe(201);
      const { id } = filed.json() as { id: string };
      expect(filed.json()).toMatchObject({ requester: { sub, team: 'support', name: marker } });
      const read = await t.app.inject({ method: 'GET', url: `/approvals/${id}`, headers: bearer(approverToken()) });
      expect(read.json()).toMatchObject({ requester: { sub, name: marker } });
      const found = await t.app.inject({
        method: 'GET',
        url: `/approvals?q=${encodeURIComponent(marker.toLowerCase())}`,
        headers: bearer(approverToken()),
      });
      expect((found.json() as { items: { id: string; requester: unknown }[] }).items).toEqual([
        expect.objectContaining({ id, requester: expect.objectContaining({ sub, name: marker }) }),
      ]);
      const event = await stream.next((e) => e.event === 'approval' && JSON.parse(e.data).id === id);
      expect(JSON.parse(event.data)).toMatchObject({ requester: { sub, name: marker } });
    } finally {
      await stream.close();
    }
  });

  it('a requester without a name is null, and the preferred_username stands in for a missing name', async () => {
    const bare = await post(
      t.app,
      '/approvals',
      refund('N-2'),
      token({ sub: `agent-${randomUUID()}`, team: 'support' }),
    );
    expect((bare.json() as { requester: { name: unknown } }).requester.name).toBeNull();
    const preferred = await post(
      t.app,
      '/approvals',
      refund('N-3'),
      token({ sub: `agent-${randomUUID()}`, team: 'support', preferred_username: 'refunds' }),
    );
    expect((preferred.json() as { requester: { name: unknown } }).requester.name).toBe('refunds');
  });
});
