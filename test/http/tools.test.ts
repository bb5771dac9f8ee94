// GET /tools over HTTP (docs/spec.md section 5.5): any authenticated caller, no role; the catalogue
// with each tool's status for the caller's own identity; what /decide answers for the tools whose
// status is a decision; a reload changes it, a failed reload does not.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { adminToken, bearer, createTestApp, post, signJwt, token, type TestApp } from '../helpers/app.js';
import { expectUnauthorized, listenLoopback } from '../helpers/http.js';

const SHOP = `
policy: shop
default: deny
tools:
  lookup: {kind: read_only}
  refund: {kind: remote_mutation, tags: [money]}
  wipe: {kind: destructive}
  "mcp__*": {kind: remote_mutation, tags: [mcp]}
rules:
  - {id: reads, tools: lookup, allow: true}
  - {id: support-refunds, tools: refund, teams: [support], allow: true, confirm: "amount > 100"}
  - {id: no-wipe, tools: wipe, abort: true}
  - {id: mcp-ops, tags: [mcp], agents: [ops-bot], allow: true}
`;

interface Item {
  name: string;
  policy: string;
  kind: string;
  tags: string[];
  status: string;
  rules: string[];
}
interface ToolsBody {
  env: string | null;
  tools: Item[];
}

let dir: string;
let t: TestApp;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-tools-'));
  await writeFile(join(dir, 'shop.yaml'), SHOP);
  t = await createTestApp({ policyDir: dir, env: null });
});
afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

const tools = (tok: string | null, url = '/tools') =>
  t.app.inject({ method: 'GET', url, headers: tok === null ? {} : bearer(tok) });

async function statusesFor(tok: string): Promise<Record<string, [string, string[]]>> {
  const res = await tools(tok);
  expect(res.statusCode, res.body).toBe(200);
  return Object.fromEntries((res.json() as ToolsBody).tools.map((i) => [i.name, [i.status, i.rules]]));
}

describe('GET /tools', () => {
  it('needs a valid bearer token: 401 without one, with a bad one, or an expired one', async () => {
    const now = Math.floor(Date.now() / 1000);
    for (const tok of [
      null,
      'garbage',
      signJwt({ sub: 'a', exp: now - 3600 }),
      signJwt({ sub: 'a', exp: now + 3600 }, { alg: 'none' }),
    ]) {
      const res = await tools(tok);
      const body = expectUnauthorized(res);
      expect(JSON.stringify(body)).not.toContain('lookup');
    }
  });

  it('answers any caller, an agent without a role too: env and one item per catalogue entry, in order', async () => {
    const res = await tools(token({ sub: 'agent-1', team: 'support', agent: 'helper', roles: [] }));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json()).toEqual({
      env: null,
      tools: [
        { name: 'lookup', policy: 'shop', kind: 'read_only', tags: [], status: 'allow', rules: ['reads'] },
        {
          name: 'refund',
          policy: 'shop',
          kind: 'remote_mutation',
          tags: ['money'],
          status: 'depends',
          rules: ['support-refunds'],
        },
        { name: 'wipe', policy: 'shop', kind: 'destructive', tags: [], status: 'abort', rules: ['no-wipe'] },
        {
          name: 'mcp__*',
          policy: 'shop',
          kind: 'remote_mutation',
          tags: ['mcp'],
          status: 'deny',
          rules: ['shop#default'],
        },
      ],
    });
    // Query parameters are ignored (docs/spec.md section 5.1), as on the other routes without a closed query.
    expect((await tools(token({ team: 'support' }), '/tools?user=someone-else&team=ops')).json()).toEqual(res.json());
  });

  it("is the caller's own: its team, agent and user decide, never the request", async () => {
    expect((await statusesFor(token({ team: 'sales' })))['refund']).toEqual(['deny', ['shop#default']]);
    expect((await statusesFor(token({ team: 'support', agent: 'ops-bot' })))['mcp__*']).toEqual(['allow', ['mcp-ops']]);
    expect((await statusesFor(token({ team: 'support', agent: 'helper' })))['mcp__*']).toEqual([
      'deny',
      ['shop#default'],
    ]);
  });

  it('every status that is a decision is what /decide answers that caller', async () => {
    for (const claims of [
      { team: 'support', agent: 'ops-bot' },
      { team: 'sales', agent: 'helper' },
    ]) {
      const tok = token(claims);
      for (const item of (await tools(tok)).json().tools as Item[]) {
        if (item.status === 'depends') continue;
        const tool = item.name.replace('*', 'list_issues');
        for (const args of [{}, { amount: 500, note: 'jane@example.com' }]) {
          const res = await post(t.app, '/decide', { tool, args }, tok);
          expect(res.json().decision, `${tool} for ${JSON.stringify(claims)}`).toBe(item.status);
          expect(item.rules).toContain(res.json().rule);
        }
      }
    }
  });

  it('is what the client reads (gatehouse-pdp/client tools())', async () => {
    const tok = token({ team: 'support', agent: 'ops-bot' });
    const url = `http://127.0.0.1:${await listenLoopback(t.app)}`;
    expect(await createClient({ url, token: tok }).tools()).toEqual((await tools(tok)).json());
  });

  it('follows a reload; a failed reload keeps the set serving, and its inventory', async () => {
    const tok = token({ team: 'support' });
    const before = await statusesFor(tok);
    await writeFile(
      join(dir, 'shop.yaml'),
      SHOP.replace('{id: reads, tools: lookup, allow: true}', '{id: reads, tools: lookup, allow: false}'),
    );
    await writeFile(join(dir, 'zz-extra.yaml'), 'policy: extra\ndefault: allow\ntools: {ping: {kind: read_only}}\n');
    expect((await post(t.app, '/admin/reload', {}, adminToken())).statusCode).toBe(200);
    const after = await statusesFor(tok);
    expect(after['lookup']).toEqual(['deny', ['reads']]);
    // The new file answers every call too: wipe still aborts, ping is denied by the shop default.
    expect(after['ping']).toEqual(['deny', ['shop#default']]);
    expect(after['wipe']).toEqual(before['wipe']);

    await writeFile(join(dir, 'zz-extra.yaml'), 'policy: extra\nrules: [{tools: [], allow: true}]\n');
    expect((await post(t.app, '/admin/reload', {}, adminToken())).statusCode).toBe(422);
    expect(await statusesFor(tok)).toEqual(after);

    await rm(join(dir, 'zz-extra.yaml'));
    await writeFile(join(dir, 'shop.yaml'), SHOP);
    expect((await post(t.app, '/admin/reload', {}, adminToken())).statusCode).toBe(200);
    expect(await statusesFor(tok)).toEqual(before);
  });
});
