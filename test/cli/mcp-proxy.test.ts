// `gatehouse mcp-proxy` end to end: a real SDK Client spawns the built CLI over stdio; the proxy wraps a
// real SDK McpServer (test/fixtures/mcp/upstream.mjs, which writes every call it executes to a ledger)
// and asks a real Gatehouse (real PostgreSQL) on a loopback port, serving
// test/fixtures/policies/mcp-proxy. The ledger proves what reached the upstream: never a refused call,
// an approved one exactly once.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../src/main.js';
import { agentToken, approverToken, createTestApp, type TestApp } from '../helpers/app.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import { listenLoopback } from '../helpers/http.js';
import {
  alive,
  CLI,
  callJson,
  childPids,
  ensureBuilt,
  eventually,
  freeTcpPort,
  ROOT,
  serverEnv,
} from '../helpers/process.js';

const UPSTREAM = join(ROOT, 'test/fixtures/mcp/upstream.mjs');
const POLICIES = 'test/fixtures/policies/mcp-proxy';
const AGENT = agentToken('mcp-agent-1', { team: 'support' });
const OPERATOR = approverToken('mcp-operator-1');

let t: TestApp;
let base: string;
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-mcp-proxy-'));
const open: Client[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  await ensureBuilt();
  t = await createTestApp({ policyDir: POLICIES, env: null, database: true });
  base = `http://127.0.0.1:${await listenLoopback(t.app)}`;
}, 180_000);
afterAll(async () => {
  await Promise.all(open.map((c) => c.close().catch(() => undefined)));
  for (const c of children) c.kill('SIGKILL');
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Proxy {
  client: Client;
  ledger: string;
  stderr(): string;
}

let ledgers = 0;
/** The proxy (node dist/main.js mcp-proxy …) under a real SDK Client, with its own ledger. */
async function startProxy(options: { url?: string; upstreamUrl?: string; ledger?: string } = {}): Promise<Proxy> {
  const ledger = options.ledger ?? join(dir, `ledger-${++ledgers}.jsonl`);
  const upstream =
    options.upstreamUrl !== undefined
      ? ['--upstream', options.upstreamUrl]
      : ['--', process.execPath, UPSTREAM, ledger];
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp-proxy', '--prefix', 'demo.', '--progress-interval', '1', ...upstream],
    env: serverEnv({ GATEHOUSE_URL: options.url ?? base, GATEHOUSE_TOKEN: AGENT }),
    cwd: ROOT,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const client = new Client({ name: 'mcp-proxy-test', version: '1.0.0' });
  await client.connect(transport);
  open.push(client);
  return { client, ledger, stderr: () => stderr };
}

/** Every call the upstream executed, in order. */
function ran(ledger: string): { tool: string; args: Record<string, unknown> }[] {
  if (!existsSync(ledger)) return [];
  return readFileSync(ledger, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { tool: string; args: Record<string, unknown> });
}

const textOf = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

/** Resolves with the approval id named in the first progress notification; collects them all. */
function progressWatch(): { onprogress: (p: Progress) => void; seen: Progress[]; approvalId: Promise<string> } {
  const seen: Progress[] = [];
  let resolve!: (id: string) => void;
  const approvalId = new Promise<string>((r) => (resolve = r));
  return {
    seen,
    approvalId,
    onprogress: (p) => {
      seen.push(p);
      const id = /approval \(([0-9a-f-]{36})\)/.exec(p.message ?? '')?.[1];
      if (id !== undefined) resolve(id);
    },
  };
}

const approval = async (id: string): Promise<Record<string, unknown>> =>
  (await callJson(base, 'GET', `/approvals/${id}`, OPERATOR)).body;

describe('mcp-proxy over stdio', () => {
  let p: Proxy;
  beforeAll(async () => {
    p = await startProxy();
  }, 60_000);

  it('relays the upstream as it is: its name, instructions, raw tool schemas, resources and prompts', async () => {
    expect(p.client.getServerVersion()).toMatchObject({ name: 'demo-upstream', version: '1.0.0' });
    expect(p.client.getInstructions()).toBe('A demo server for the Gatehouse proxy tests.');
    const { tools } = await p.client.listTools();
    const lookup = tools.find((tool) => tool.name === 'lookup');
    expect(lookup).toMatchObject({
      description: 'Look an order up',
      annotations: { title: 'The lookup tool' },
      inputSchema: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
      outputSchema: { type: 'object' },
    });
    const { contents } = await p.client.readResource({ uri: 'demo://readme' });
    expect(contents).toEqual([{ uri: 'demo://readme', text: 'the demo upstream readme' }]);
    const prompt = await p.client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } });
    expect(prompt.messages[0]?.content).toEqual({ type: 'text', text: 'Hello, Ada' });
    expect(ran(p.ledger)).toEqual([]);
  });

  it('tools/list leaves out what never runs (denied, aborting) and what no catalogue names', async () => {
    const { tools } = await p.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['lookup', 'refund']);
  });

  it('an allowed call is forwarded, runs once, and its result comes back whole', async () => {
    const r = (await p.client.callTool({ name: 'lookup', arguments: { order: 'A1' } })) as CallToolResult;
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toEqual({ tool: 'lookup', args: { order: 'A1' } });
    expect(textOf(r)).toBe('lookup ran with {"order":"A1"}');
    expect(ran(p.ledger)).toEqual([{ tool: 'lookup', args: { order: 'A1' } }]);
  });

  it("a denied call never reaches the upstream: isError carrying the decision's message", async () => {
    const before = ran(p.ledger).length;
    const r = (await p.client.callTool({ name: 'wipe', arguments: { confirm: true } })) as CallToolResult;
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe(
      'The "demo.wipe" action was not approved by policy. Reason: wiping orders is never allowed from an agent. Tell the user it was declined; do not retry it unchanged.',
    );
    expect(r._meta).toMatchObject({ 'gatehouse/decision': 'deny' });
    // A tool the list hid is decided like any other: no catalogue names demo.note, the default denies it.
    const note = (await p.client.callTool({ name: 'note', arguments: { text: 'hi' } })) as CallToolResult;
    expect(note.isError).toBe(true);
    expect(textOf(note)).toMatch(/^The "demo\.note" action was not approved by policy/);
    expect(ran(p.ledger)).toHaveLength(before);
  });

  it('an approval: progress while it is pending, an operator grants it over REST, the call runs exactly once', async () => {
    const watch = progressWatch();
    const call = p.client.callTool({ name: 'refund', arguments: { order: 'R1', amount: 120 } }, undefined, {
      onprogress: watch.onprogress,
      resetTimeoutOnProgress: true,
    });
    const id = await watch.approvalId;
    const filed = await approval(id);
    expect(filed).toMatchObject({ status: 'pending', tool: 'demo.refund', args: { order: 'R1', amount: 120 } });
    // The run id is the proxy's, printed on its stderr.
    expect(p.stderr()).toContain(`run ${filed.run_id as string}`);
    // Still pending a second later: another notification (--progress-interval 1), progress growing.
    await eventually('a second progress notification', 10_000, async () => (watch.seen.length >= 2 ? true : undefined));
    expect(watch.seen[1]!.progress).toBeGreaterThan(watch.seen[0]!.progress);
    expect(ran(p.ledger).filter((c) => c.tool === 'refund')).toEqual([]);

    const granted = await callJson(base, 'POST', `/approvals/${id}/grant`, OPERATOR, { note: 'customer called' });
    expect(granted.status).toBe(200);
    const r = (await call) as CallToolResult;
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toEqual({ tool: 'refund', args: { order: 'R1', amount: 120 } });
    expect(ran(p.ledger).filter((c) => c.tool === 'refund')).toEqual([
      { tool: 'refund', args: { order: 'R1', amount: 120 } },
    ]);
    expect((await approval(id)).status).toBe('consumed');
  });

  it('a grant amended by an operator: the upstream runs the amended arguments, and the result names what changed', async () => {
    const watch = progressWatch();
    const call = p.client.callTool({ name: 'refund', arguments: { order: 'R7', amount: 900 } }, undefined, {
      onprogress: watch.onprogress,
      resetTimeoutOnProgress: true,
    });
    const id = await watch.approvalId;
    const amended = { order: 'R7', amount: 450 };
    const granted = await callJson(base, 'POST', `/approvals/${id}/grant`, OPERATOR, { note: 'half', args: amended });
    expect(granted.status).toBe(200);
    const r = (await call) as CallToolResult;
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toEqual({ tool: 'refund', args: amended });
    expect(r.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/amended .*changed: amount/) });
    expect(ran(p.ledger).filter((c) => c.tool === 'refund' && c.args.order === 'R7')).toEqual([
      { tool: 'refund', args: amended },
    ]);
    expect((await approval(id)).status).toBe('consumed');
  });

  it("an operator's denial reaches the model as isError text with the operator's reason; nothing runs", async () => {
    const watch = progressWatch();
    const call = p.client.callTool({ name: 'refund', arguments: { order: 'R2', amount: 500 } }, undefined, {
      onprogress: watch.onprogress,
    });
    const id = await watch.approvalId;
    expect(
      (await callJson(base, 'POST', `/approvals/${id}/deny`, OPERATOR, { reason: 'that order was already refunded' }))
        .status,
    ).toBe(200);
    const r = (await call) as CallToolResult;
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('that order was already refunded');
    expect(ran(p.ledger).filter((c) => c.args.order === 'R2')).toEqual([]);
  });

  it('notifications/cancelled (the client aborts the request) withdraws the approval: cancelled, never run', async () => {
    const watch = progressWatch();
    const abort = new AbortController();
    const call = p.client.callTool({ name: 'refund', arguments: { order: 'R3', amount: 900 } }, undefined, {
      onprogress: watch.onprogress,
      signal: abort.signal,
    });
    const id = await watch.approvalId;
    abort.abort('the user pressed stop');
    await expect(call).rejects.toThrow();
    const status = await eventually('the approval to be cancelled', 10_000, async () =>
      (await approval(id)).status === 'cancelled' ? 'cancelled' : undefined,
    );
    expect(status).toBe('cancelled');
    // Granting it now changes nothing: it can never be granted, and nothing ran.
    expect((await callJson(base, 'POST', `/approvals/${id}/grant`, OPERATOR, {})).status).toBe(409);
    expect(ran(p.ledger).filter((c) => c.args.order === 'R3')).toEqual([]);
  });
});

describe("mcp-proxy: the upstream's results through the result guards", () => {
  const GITHUB_TOKEN = `ghp_${'a1B2c3D4e5'.repeat(4)}`;
  let p: Proxy;
  beforeAll(async () => {
    p = await startProxy();
  }, 60_000);

  it('redact: the client sees the result with the finding replaced, in every place, and the findings in _meta', async () => {
    const r = (await p.client.callTool({ name: 'lookup', arguments: { order: 'ann@example.com' } })) as CallToolResult;
    expect(r.isError).toBeFalsy();
    expect(textOf(r)).toBe('lookup ran with {"order":"[REDACTED:email]"}');
    expect(r.structuredContent).toEqual({ tool: 'lookup', args: { order: '[REDACTED:email]' } });
    expect(JSON.stringify(r)).not.toContain('ann@example.com');
    expect(r._meta?.['gatehouse/findings']).toEqual([
      { guard: 'lookup-pii', type: 'email', path: '/*/0/*' },
      { guard: 'lookup-pii', type: 'email', path: '/*/*/*' },
    ]);
    // The call ran, with the arguments as the model sent them: only what came back was redacted.
    expect(ran(p.ledger)).toContainEqual({ tool: 'lookup', args: { order: 'ann@example.com' } });
  });

  it('deny: the call ran, but the client gets an isError result saying the output was withheld, never the value', async () => {
    const r = (await p.client.callTool({ name: 'lookup', arguments: { order: GITHUB_TOKEN } })) as CallToolResult;
    expect(r.isError).toBe(true);
    expect(textOf(r)).toMatch(/withheld/);
    expect(JSON.stringify(r)).not.toContain(GITHUB_TOKEN);
    expect(r._meta).toMatchObject({ 'gatehouse/decision': 'deny', 'gatehouse/withheld': true });
    expect(ran(p.ledger)).toContainEqual({ tool: 'lookup', args: { order: GITHUB_TOKEN } });
  });

  it("a result held for an operator's review: progress while it waits, granted over REST, then handed to the client", async () => {
    const seen: Progress[] = [];
    let resolve!: (id: string) => void;
    const reviewId = new Promise<string>((r) => (resolve = r));
    const call = p.client.callTool({ name: 'lookup', arguments: { order: 'TICKET-1234' } }, undefined, {
      onprogress: (n) => {
        seen.push(n);
        const id = /review of the result \(([0-9a-f-]{36})\)/.exec(n.message ?? '')?.[1];
        if (id !== undefined) resolve(id);
      },
      resetTimeoutOnProgress: true,
    });
    const id = await reviewId;
    expect(await approval(id)).toMatchObject({ status: 'pending', tool: 'demo.lookup', kind: 'pattern' });
    expect((await callJson(base, 'POST', `/approvals/${id}/grant`, OPERATOR, {})).status).toBe(200);
    const r = (await call) as CallToolResult;
    expect(r.isError).toBeFalsy();
    expect(textOf(r)).toBe('lookup ran with {"order":"TICKET-1234"}');
    expect((await approval(id)).status).toBe('consumed');
  });

  it('fails closed: when Gatehouse cannot be asked about the result, it is withheld', async () => {
    const fault = await startFaultProxy(base, (req) => (req.url === '/inspect' ? 'lose-answer' : 'forward'));
    try {
      const q = await startProxy({ url: fault.url });
      const r = (await q.client.callTool({ name: 'lookup', arguments: { order: 'C1' } })) as CallToolResult;
      expect(r.isError).toBe(true);
      expect(textOf(r)).toMatch(/^The output of the "demo\.lookup" action was withheld: Gatehouse could not check it/);
      expect(r._meta).toMatchObject({ 'gatehouse/decision': 'deny', 'gatehouse/withheld': true });
      expect(JSON.stringify(r)).not.toContain('lookup ran');
      expect(ran(q.ledger)).toEqual([{ tool: 'lookup', args: { order: 'C1' } }]);
    } finally {
      await fault.close();
    }
  });
});

describe('mcp-proxy: an abort ends the session', () => {
  const ABORT =
    'The "demo.launch" action crossed a hard limit of this run (a rocket launch is beyond this run\'s limits). Stop the run now and tell the user why; do not try to work around it. Gatehouse answered abort: this run must end now; make no further tool calls in it.';
  const ended = (tool: string): string =>
    `The "${tool}" action was not run: this session ended when Gatehouse aborted an earlier call, and every later call in it is refused. ${ABORT}`;

  it('the abort never reaches the upstream; a call waiting for an operator is withdrawn; every later call is refused unasked; a new session starts fresh', async () => {
    const fault = await startFaultProxy(base, () => 'forward');
    try {
      const p = await startProxy({ url: fault.url });
      expect(
        ((await p.client.callTool({ name: 'lookup', arguments: { order: 'B1' } })) as CallToolResult).isError,
      ).toBeFalsy();
      const watch = progressWatch();
      const waiting = p.client.callTool({ name: 'refund', arguments: { order: 'B2', amount: 700 } }, undefined, {
        onprogress: watch.onprogress,
      });
      const id = await watch.approvalId;

      const aborted = (await p.client.callTool({ name: 'launch', arguments: { target: 'moon' } })) as CallToolResult;
      expect(aborted.isError).toBe(true);
      expect(textOf(aborted)).toBe(ABORT);
      expect(aborted._meta).toMatchObject({ 'gatehouse/decision': 'abort' });
      // The call that was waiting for an operator ends with the session: its approval withdrawn.
      const withdrawn = (await waiting) as CallToolResult;
      expect(withdrawn.isError).toBe(true);
      expect(textOf(withdrawn)).toBe(ended('demo.refund'));
      expect((await approval(id)).status).toBe('cancelled');
      expect(p.stderr()).toContain('gatehouse mcp-proxy: Gatehouse aborted demo.launch: the session has ended');

      // Later calls: refused with the abort's message, without asking Gatehouse or reaching the upstream.
      const asked = fault.seen.length;
      for (const [name, args] of [
        ['lookup', { order: 'B3' }],
        ['refund', { order: 'B4', amount: 10 }],
      ] as const) {
        const r = (await p.client.callTool({ name, arguments: args })) as CallToolResult;
        expect(r.isError).toBe(true);
        expect(textOf(r)).toBe(ended(`demo.${name}`));
        expect(r._meta).toMatchObject({ 'gatehouse/decision': 'abort' });
      }
      expect(fault.seen.length).toBe(asked);
      expect(ran(p.ledger)).toEqual([{ tool: 'lookup', args: { order: 'B1' } }]);

      // The client reconnects (over stdio: a new proxy process): a new session, decided afresh.
      const next = await startProxy({ url: fault.url, ledger: p.ledger });
      const r = (await next.client.callTool({ name: 'lookup', arguments: { order: 'B3' } })) as CallToolResult;
      expect(r.isError).toBeFalsy();
      expect(ran(p.ledger)).toEqual([
        { tool: 'lookup', args: { order: 'B1' } },
        { tool: 'lookup', args: { order: 'B3' } },
      ]);
    } finally {
      await fault.close();
    }
  });
});

describe('mcp-proxy across a crash and a lost answer', () => {
  it('a proxy killed while an approval is pending: the next proxy waits on the same approval, and the call runs once', async () => {
    const first = await startProxy();
    const watch = progressWatch();
    void first.client
      .callTool({ name: 'refund', arguments: { order: 'R4', amount: 300 } }, undefined, {
        onprogress: watch.onprogress,
      })
      .catch(() => undefined);
    const id = await watch.approvalId;
    const pid = (first.client.transport as StdioClientTransport | undefined)?.pid;
    expect(pid).toBeTypeOf('number');
    process.kill(pid!, 'SIGKILL');
    await eventually('the first proxy to be gone', 10_000, async () => (isAlive(pid!) ? undefined : true));
    expect((await approval(id)).status).toBe('pending');

    const second = await startProxy({ ledger: first.ledger });
    const again = progressWatch();
    const call = second.client.callTool({ name: 'refund', arguments: { order: 'R4', amount: 300 } }, undefined, {
      onprogress: again.onprogress,
    });
    expect(await again.approvalId).toBe(id);
    expect((await callJson(base, 'POST', `/approvals/${id}/grant`, OPERATOR, {})).status).toBe(200);
    expect(((await call) as CallToolResult).isError).toBeFalsy();
    expect(ran(first.ledger).filter((c) => c.args.order === 'R4')).toHaveLength(1);
    expect((await approval(id)).status).toBe('consumed');
  });

  it('a redeem whose answer is lost is retried under its Idempotency-Key: the call runs once', async () => {
    let cut = 0;
    const fault = await startFaultProxy(base, (_req, body) =>
      body.includes('"approval_id"') && cut++ === 0 ? 'lose-answer' : 'forward',
    );
    try {
      const p = await startProxy({ url: fault.url });
      const watch = progressWatch();
      const call = p.client.callTool({ name: 'refund', arguments: { order: 'R5', amount: 300 } }, undefined, {
        onprogress: watch.onprogress,
      });
      const id = await watch.approvalId;
      expect((await callJson(base, 'POST', `/approvals/${id}/grant`, OPERATOR, {})).status).toBe(200);
      expect(((await call) as CallToolResult).isError).toBeFalsy();
      expect(ran(p.ledger).filter((c) => c.args.order === 'R5')).toHaveLength(1);
      expect(fault.replayed).toBe(1);
      expect((await approval(id)).status).toBe('consumed');
    } finally {
      await fault.close();
    }
  });
});

describe('mcp-proxy with Gatehouse unreachable', () => {
  it('tools/call is an isError result and never runs; tools/list is an error, not the unfiltered list', async () => {
    const p = await startProxy({ url: `http://127.0.0.1:${await freeTcpPort()}` });
    const r = (await p.client.callTool({ name: 'lookup', arguments: { order: 'A1' } })) as CallToolResult;
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe(
      'The "demo.lookup" action was not run: Gatehouse could not check it against policy (unreachable). Tell the user; do not work around it.',
    );
    await expect(p.client.listTools()).rejects.toThrow(/Gatehouse could not say which tools may run/);
    expect(ran(p.ledger)).toEqual([]);
  });
});

describe('mcp-proxy --upstream (Streamable HTTP)', () => {
  it('forwards an allowed call to the HTTP upstream and keeps a denied one from it', async () => {
    const ledger = join(dir, 'ledger-http.jsonl');
    const upstream = spawn(process.execPath, [UPSTREAM, ledger, '--http'], {
      cwd: ROOT,
      env: serverEnv({}),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(upstream);
    let out = '';
    upstream.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    const url = await eventually('the HTTP upstream to listen', 20_000, async () => /listening (\S+)/.exec(out)?.[1]);
    const p = await startProxy({ upstreamUrl: url, ledger });
    expect((await p.client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(['lookup', 'refund']);
    const allowed = (await p.client.callTool({ name: 'lookup', arguments: { order: 'H1' } })) as CallToolResult;
    expect(allowed.structuredContent).toEqual({ tool: 'lookup', args: { order: 'H1' } });
    const denied = (await p.client.callTool({ name: 'wipe', arguments: {} })) as CallToolResult;
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toMatch(/^The "demo\.wipe" action was not approved by policy/);
    expect(ran(ledger)).toEqual([{ tool: 'lookup', args: { order: 'H1' } }]);
  });
});

describe('mcp-proxy before it starts anything', () => {
  async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
    let out = '';
    let err = '';
    const code = await runCli(argv, { out: (s) => (out += s), err: (s) => (err += s) });
    return { code, out, err };
  }

  it("exit 2 without GATEHOUSE_URL or GATEHOUSE_TOKEN; after --, --help is the upstream command's", async () => {
    vi.stubEnv('GATEHOUSE_URL', '');
    vi.stubEnv('GATEHOUSE_TOKEN', AGENT);
    try {
      expect(await run('mcp-proxy', '--', 'npx', 'some-server', '--help')).toEqual({
        code: 2,
        out: '',
        err: 'gatehouse mcp-proxy: GATEHOUSE_URL is not set (the Gatehouse service, e.g. http://127.0.0.1:8080)\n',
      });
      vi.stubEnv('GATEHOUSE_URL', base);
      vi.stubEnv('GATEHOUSE_TOKEN', '');
      expect(await run('mcp-proxy', '--upstream', 'http://127.0.0.1:1/mcp')).toMatchObject({
        code: 2,
        err: expect.stringContaining('GATEHOUSE_TOKEN is not set'),
      });
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('exit 1 when the upstream command cannot start', async () => {
    vi.stubEnv('GATEHOUSE_URL', base);
    vi.stubEnv('GATEHOUSE_TOKEN', AGENT);
    try {
      const r = await run('mcp-proxy', '--', join(dir, 'no-such-server'));
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/^gatehouse mcp-proxy: the upstream server did not start: /);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe('mcp-proxy as a process', () => {
  /** The proxy spawned directly, its upstream's pid once it has connected. */
  async function spawnProxy(): Promise<{
    proxy: ChildProcess;
    upstreamPid: number;
    exit: Promise<number | null>;
    stderr: () => string;
  }> {
    const proxy = spawn(
      process.execPath,
      [CLI, 'mcp-proxy', '--', process.execPath, UPSTREAM, join(dir, 'ledger-process.jsonl')],
      {
        cwd: ROOT,
        env: serverEnv({ GATEHOUSE_URL: base, GATEHOUSE_TOKEN: AGENT }),
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    children.push(proxy);
    let stderr = '';
    proxy.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const exit = new Promise<number | null>((resolve) => proxy.once('exit', (code) => resolve(code)));
    await eventually('the proxy to connect its upstream', 20_000, async () =>
      stderr.includes('relaying demo-upstream') ? true : undefined,
    );
    const [upstreamPid] = childPids(proxy.pid!);
    expect(upstreamPid).toBeGreaterThan(0);
    return { proxy, upstreamPid: upstreamPid!, exit, stderr: () => stderr };
  }

  it('exits 0 when the MCP client closes stdin, and stops the upstream command', async () => {
    const { proxy, upstreamPid, exit } = await spawnProxy();
    proxy.stdin!.end();
    expect(await exit).toBe(0);
    await eventually('the upstream to be gone', 10_000, async () => (alive(upstreamPid) ? undefined : true));
  });

  it('exits 1 when the upstream goes away, saying so', async () => {
    const { upstreamPid, exit, stderr } = await spawnProxy();
    process.kill(upstreamPid, 'SIGKILL');
    expect(await exit).toBe(1);
    expect(stderr()).toContain('gatehouse mcp-proxy: demo-upstream closed the connection');
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
