// `gatehouse hook claude-code`: the built CLI spawned as Claude Code spawns a hook (PreToolUse input on
// stdin, the decision on stdout), against a real Gatehouse (real PostgreSQL) on a loopback port serving
// the example policy's copy in test/cases/claude-code; what an allowed call loads; state files planted
// by someone who can write the state directory. Then the mapping itself, function by function.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  directory,
  hookOutputOf,
  parseHookInput,
  postHookOutputOf,
  toolCallOf,
} from '../../src/cli/hook/claude-code.js';
import { callKey, fileMemory } from '../../src/client/memory.js';
import { agentToken, approverToken, createTestApp, type TestApp } from '../helpers/app.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import { listenLoopback } from '../helpers/http.js';
import { CLI, callJson, ensureBuilt, freeTcpPort, ROOT, serverEnv } from '../helpers/process.js';

const AGENT = agentToken('claude-agent-1', { team: 'dev' });
const OPERATOR = approverToken('claude-operator-1');
const PROJECT = '/home/ann/shop';

let t: TestApp;
let base: string;
const state = mkdtempSync(join(tmpdir(), 'gatehouse-hook-state-'));

beforeAll(async () => {
  await ensureBuilt();
  t = await createTestApp({ policyDir: 'test/cases/claude-code', env: null, database: true });
  base = `http://127.0.0.1:${await listenLoopback(t.app)}`;
}, 180_000);
afterAll(async () => {
  await t?.close();
  rmSync(state, { recursive: true, force: true });
});

let sessions = 0;
/** A PreToolUse input as Claude Code writes it. */
function preToolUse(tool_name: string, tool_input: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    session_id: `session-${++sessions}`,
    transcript_path: '/home/ann/.claude/projects/shop/transcript.jsonl',
    cwd: PROJECT,
    permission_mode: 'default',
    hook_event_name: 'PreToolUse',
    tool_name,
    tool_input,
    tool_use_id: `toolu_${sessions}`,
    ...extra,
  };
}

/** A PostToolUse input as Claude Code writes it: the call and what the tool returned. */
function postToolUse(tool_name: string, tool_input: Record<string, unknown>, tool_response: unknown) {
  return { ...preToolUse(tool_name, tool_input), hook_event_name: 'PostToolUse', tool_response };
}

interface HookRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The parsed stdout, when it is JSON. */
  output?: {
    continue?: boolean;
    hookSpecificOutput: { hookEventName: string; permissionDecision: string; permissionDecisionReason: string };
  };
}

/** `node [NODE_ARGS] dist/main.js hook claude-code ARGS` with `stdin` written to it, in the given environment. */
function hook(
  stdin: string | object,
  args: string[] = [],
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<HookRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, CLI, 'hook', 'claude-code', ...args], {
      cwd: ROOT,
      env: serverEnv({
        GATEHOUSE_URL: base,
        GATEHOUSE_TOKEN: AGENT,
        GATEHOUSE_STATE_DIR: state,
        CLAUDE_PROJECT_DIR: PROJECT,
        ...env,
      }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => {
      let output: HookRun['output'];
      try {
        output = JSON.parse(stdout) as HookRun['output'];
      } catch {
        output = undefined;
      }
      resolve({ code, stdout, stderr, ...(output ? { output } : {}) });
    });
    child.stdin.end(typeof stdin === 'string' ? stdin : JSON.stringify(stdin));
  });
}

const decisionOf = (r: HookRun) => r.output?.hookSpecificOutput.permissionDecision;
const reasonOf = (r: HookRun) => r.output?.hookSpecificOutput.permissionDecisionReason ?? '';
const approvalIdIn = (text: string): string => /approval ([0-9a-f-]{36})/.exec(text)?.[1] ?? '';
const approval = async (id: string) => (await callJson(base, 'GET', `/approvals/${id}`, OPERATOR)).body;

describe('gatehouse hook claude-code against Gatehouse', () => {
  it('allows git status: exit 0 and the PreToolUse output', async () => {
    const r = await hook(preToolUse('Bash', { command: 'git status', description: 'Show the working tree status' }));
    expect(r.code).toBe(0);
    expect(r.output).toEqual({
      hookSpecificOutput: {
        hookEventName: 'PreToolUse',
        permissionDecision: 'allow',
        permissionDecisionReason: 'The "Bash" action is allowed by policy.',
      },
    });
  });

  it('an allowed call loads only the hook and the client: no service, policy compiler, database driver or package', async () => {
    // Every module the process resolves, recorded by a loader hook (the hook runs once per tool call:
    // what it loads is most of what it costs; bench/hook.mjs times it).
    const list = join(state, 'modules.txt');
    const record = pathToFileURL(join(ROOT, 'test/cli/fixtures/modules/record.mjs')).href;
    const r = await hook(preToolUse('Bash', { command: 'git status' }), [], { RECORD_MODULES_TO: list }, [
      '--import',
      record,
    ]);
    expect(decisionOf(r)).toBe('allow');
    const loaded = [
      ...new Set(
        readFileSync(list, 'utf8')
          .split('\n')
          .filter((u) => u !== '' && !u.endsWith('/fixtures/modules/hooks.mjs')),
      ),
    ];
    const ours = loaded.filter((u) => u.startsWith('file:')).map((u) => relative(ROOT, fileURLToPath(u)));
    expect(ours).toContain('dist/cli/hook.js');
    // Not even the strict parser and the canonical form: they load once the store holds an entry to check.
    const LEAN = /^dist\/(main\.js|cli\/(args|io|connection|hook)\.js|cli\/hook\/[^/]+\.js|client\/[^/]+\.js)$/;
    expect(ours.filter((f) => !LEAN.test(f) && !f.startsWith('test/cli/fixtures/modules/'))).toEqual([]);
    expect(ours.filter((f) => /^dist\/client\/(ai-sdk|openai-agents)\.js$/.test(f))).toEqual([]);
    // Only Node's own modules besides ours (no fastify, postgres, pino, ajv, yaml, jose…), and not its
    // fetch (undici), whose first use costs more than the rest of the hook.
    expect(loaded.filter((u) => !/^(file|node|internal):/.test(u))).toEqual([]);
    expect(loaded.filter((u) => u.startsWith('file:') && u.includes('/node_modules/'))).toEqual([]);
    expect(loaded).toContain('internal:http');
    expect(loaded.filter((u) => u.includes('undici'))).toEqual([]);
    // Nor node:crypto, which costs it more than node:http: an allowed call hashes nothing.
    expect(loaded.filter((u) => u.includes('crypto'))).toEqual([]);
  });

  it('denies rm -rf / with the reason the model reads', async () => {
    const r = await hook(preToolUse('Bash', { command: 'rm -rf /' }));
    expect(r.code).toBe(0);
    expect(decisionOf(r)).toBe('deny');
    expect(reasonOf(r)).toBe(
      'The "Bash" action was not approved by policy. Reason: the agent never deletes files and never runs sudo. Tell the user it was declined; do not retry it unchanged.',
    );
  });

  it('writes under the project are allowed, outside it denied; without CLAUDE_PROJECT_DIR the project is the cwd', async () => {
    expect(decisionOf(await hook(preToolUse('Write', { file_path: `${PROJECT}/src/cart.ts`, content: 'x' })))).toBe(
      'allow',
    );
    expect(decisionOf(await hook(preToolUse('Write', { file_path: '/home/ann/.bashrc', content: 'x' })))).toBe('deny');
    expect(decisionOf(await hook(preToolUse('Write', { file_path: `${PROJECT}/../shop-admin/x`, content: 'x' })))).toBe(
      'deny',
    );
    const inTmp = preToolUse('Write', { file_path: '/tmp/work/x.ts', content: 'x' }, { cwd: '/tmp/work' });
    expect(decisionOf(await hook(inTmp))).toBe('deny');
    expect(decisionOf(await hook(inTmp, [], { CLAUDE_PROJECT_DIR: '' }))).toBe('allow');
  });

  it('an approval: deny naming it; granted over REST; the same call again is allowed once (file store), then needs a new one', async () => {
    const input = preToolUse('mcp__github__create_issue', { repo: 'acme/shop', title: 'Checkout is broken' });
    const first = await hook(input, ['--wait', '1']);
    expect(first.code).toBe(0);
    expect(decisionOf(first)).toBe('deny');
    const id = approvalIdIn(reasonOf(first));
    expect(reasonOf(first)).toContain(
      `(Gatehouse approval ${id}: pending.) Once an operator grants it, retry the same call unchanged`,
    );
    const filed = await approval(id);
    expect(filed).toMatchObject({ status: 'pending', tool: 'mcp__github__create_issue', run_id: input.session_id });
    expect(filed.context).toEqual({ cwd: `${PROJECT}/`, project_dir: `${PROJECT}/` });

    // Asked again before anyone answered: the same approval, not a second one.
    const again = await hook(input, ['--wait', '1']);
    expect(approvalIdIn(reasonOf(again))).toBe(id);

    expect((await callJson(base, 'POST', `/approvals/${id}/grant`, OPERATOR, { note: 'go ahead' })).status).toBe(200);
    const granted = await hook(input, ['--wait', '1']);
    expect(decisionOf(granted)).toBe('allow');
    expect((await approval(id)).status).toBe('consumed');

    // Used once: the same call after that needs a new approval.
    const after = await hook(input, ['--wait', '1']);
    expect(decisionOf(after)).toBe('deny');
    const next = approvalIdIn(reasonOf(after));
    expect(next).not.toBe('');
    expect(next).not.toBe(id);
  });

  it('a grant amended by an operator: allow with updatedInput (the amended arguments) and the changed paths for the model', async () => {
    const input = preToolUse('mcp__github__create_issue', {
      repo: 'acme/shop',
      title: 'Checkout is broken: card 4111',
    });
    const first = await hook(input, ['--wait', '1']);
    const id = approvalIdIn(reasonOf(first));
    const amended = { repo: 'acme/shop', title: 'Checkout is broken' };
    const grant = await callJson(base, 'POST', `/approvals/${id}/grant`, OPERATOR, { note: 'no card', args: amended });
    expect(grant.status).toBe(200);
    const run = await hook(input, ['--wait', '1']);
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout) as {
      hookSpecificOutput: { permissionDecision: string; updatedInput?: unknown; additionalContext?: string };
    };
    expect(out.hookSpecificOutput).toMatchObject({ permissionDecision: 'allow', updatedInput: amended });
    expect(reasonOf(run)).toMatch(/amended .*changed: title/);
    expect(out.hookSpecificOutput.additionalContext).toMatch(/changed: title/);
    expect((await approval(id)).status).toBe('consumed');
  });

  it("an operator's denial is a deny with the operator's reason", async () => {
    const input = preToolUse('mcp__github__delete_branch', { branch: 'main' });
    const id = approvalIdIn(reasonOf(await hook(input, ['--wait', '1'])));
    expect(
      (await callJson(base, 'POST', `/approvals/${id}/deny`, OPERATOR, { reason: 'main is protected' })).status,
    ).toBe(200);
    const r = await hook(input, ['--wait', '1']);
    expect(decisionOf(r)).toBe('deny');
    expect(reasonOf(r)).toContain('main is protected');
  });

  it('a redeem whose answer is lost is sent again under its Idempotency-Key: allowed once, the grant not burnt', async () => {
    let cut = 0;
    const proxy = await startFaultProxy(base, (_req, body) =>
      body.includes('"approval_id"') && cut++ === 0 ? 'lose-answer' : 'forward',
    );
    try {
      const input = preToolUse('mcp__github__create_issue', { repo: 'acme/shop', title: 'Lost answers' });
      const id = approvalIdIn(reasonOf(await hook(input, ['--wait', '0'], { GATEHOUSE_URL: proxy.url })));
      expect((await callJson(base, 'POST', `/approvals/${id}/grant`, OPERATOR, {})).status).toBe(200);
      const granted = await hook(input, ['--wait', '5'], { GATEHOUSE_URL: proxy.url });
      expect(decisionOf(granted)).toBe('allow');
      const redeems = proxy.seen.filter((r) => r.body.includes('"approval_id"'));
      expect(redeems).toHaveLength(2);
      expect(redeems[1]!.key).toBe(redeems[0]!.key);
      expect(proxy.replayed).toBe(1);
      expect((await approval(id)).status).toBe('consumed');
    } finally {
      await proxy.close();
    }
  });

  it('--on-pending ask hands a pending approval to the person at the keyboard', async () => {
    const r = await hook(preToolUse('mcp__slack__post_message', { channel: '#ops', text: 'deploying' }), [
      '--wait',
      '0',
      '--on-pending',
      'ask',
    ]);
    expect(r.code).toBe(0);
    expect(decisionOf(r)).toBe('ask');
    expect(reasonOf(r)).toMatch(
      /^Gatehouse approval [0-9a-f-]{36} is still pending\. The "mcp__slack__post_message" action needs an operator's approval/,
    );
  });

  it('Gatehouse unreachable: deny, never allow', async () => {
    const r = await hook(preToolUse('Bash', { command: 'git status' }), [], {
      GATEHOUSE_URL: `http://127.0.0.1:${await freeTcpPort()}`,
    });
    expect(r.code).toBe(0);
    expect(decisionOf(r)).toBe('deny');
    expect(reasonOf(r)).toBe(
      'The "Bash" action was not run: Gatehouse could not check it against policy (unreachable). Tell the user; do not work around it.',
    );
  });

  it('a Gatehouse that never answers: deny once the deadline passes (a hook Claude Code times out would let the call run)', async () => {
    const silent: Server = createServer(() => undefined); // accepts, never answers
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const port = (silent.address() as { port: number }).port;
      const r = await hook(preToolUse('Bash', { command: 'git status' }), ['--wait', '0'], {
        GATEHOUSE_URL: `http://127.0.0.1:${port}`,
      });
      expect(r.code).toBe(0);
      expect(decisionOf(r)).toBe('deny');
    } finally {
      silent.close();
    }
  });

  it('no GATEHOUSE_URL or GATEHOUSE_TOKEN: deny saying what is missing', async () => {
    const noUrl = await hook(preToolUse('Bash', { command: 'git status' }), [], { GATEHOUSE_URL: '' });
    expect(decisionOf(noUrl)).toBe('deny');
    expect(reasonOf(noUrl)).toContain('GATEHOUSE_URL is not set');
    const noToken = await hook(preToolUse('Bash', { command: 'git status' }), [], { GATEHOUSE_TOKEN: '' });
    expect(reasonOf(noToken)).toContain('GATEHOUSE_TOKEN is not set');
  });

  it('malformed stdin, or another event: exit 2 with the reason on stderr (Claude Code blocks the call)', async () => {
    for (const input of [
      '{"tool_name": "Bash",',
      '[]',
      '',
      JSON.stringify(preToolUse('Bash', { command: 'ls' }, { hook_event_name: 'PostToolUse' })),
    ]) {
      const r = await hook(input);
      expect(r.code, input).toBe(2);
      expect(r.stdout, input).toBe('');
      expect(r.stderr, input).toMatch(/^gatehouse hook: .*; the tool call is blocked\n$/);
    }
  });

  it('a usage error is exit 2 too (blocking), and --help prints the usage', async () => {
    expect((await hook(preToolUse('Bash', { command: 'ls' }), ['--wait', 'soon'])).code).toBe(2);
    expect((await hook(preToolUse('Bash', { command: 'ls' }), ['--on-pending', 'allow'])).code).toBe(2);
    const help = await hook('', ['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: gatehouse hook claude-code/);
  });
});

// Someone who can write the state directory (another program of the same user, a poisoned backup)
// but cannot forge Gatehouse's answers: whatever they plant, the hook never allows a call that
// Gatehouse has not allowed for exactly that call, and a planted entry is discarded, not obeyed.
describe('a planted state file', () => {
  const approvals = fileMemory(join(state, 'approvals'));
  type Input = ReturnType<typeof preToolUse>;
  /** The store key of this hook input's call: where the hook looks for its entry. */
  const keyOf = (input: Input): Promise<string> =>
    callKey(
      input.session_id,
      toolCallOf(
        { sessionId: input.session_id, cwd: input.cwd, toolName: input.tool_name, toolInput: input.tool_input },
        PROJECT,
      ),
    );
  const plant = async (input: Input, value: string) => approvals.set(await keyOf(input), value);
  const context = { cwd: `${PROJECT}/`, project_dir: `${PROJECT}/` };
  const deleteRepo = () => preToolUse('mcp__github__delete_repo', { repo: 'acme/shop' });
  const runOf = (input: Input) => ({ id: input.session_id, steps: [] });

  /** A granted approval of another call (an MCP issue) by this agent, filed through the hook itself. */
  async function grantedElsewhere(): Promise<{ id: string; input: Input }> {
    // A title of its own: the same call again would be answered with the approval already granted.
    const input = preToolUse('mcp__github__create_issue', { repo: 'acme/shop', title: `Harmless ${sessions}` });
    const id = approvalIdIn(reasonOf(await hook(input, ['--wait', '0'])));
    expect((await callJson(base, 'POST', `/approvals/${id}/grant`, OPERATOR, {})).status).toBe(200);
    return { id, input };
  }

  /** The answer is `decision` (never allow), naming a new pending approval of delete_repo itself. */
  async function expectFreshApproval(r: HookRun, not: string[] = [], decision = 'deny'): Promise<void> {
    expect(r.code).toBe(0);
    expect(decisionOf(r)).toBe(decision);
    const id = approvalIdIn(reasonOf(r));
    expect(id).not.toBe('');
    for (const other of not) expect(id).not.toBe(other);
    expect(await approval(id)).toMatchObject({
      status: 'pending',
      tool: 'mcp__github__delete_repo',
      args: { repo: 'acme/shop' },
    });
  }

  it('a redeem body of a harmless call, planted under delete_repo: not allowed; decided afresh (a new approval for delete_repo)', async () => {
    const input = deleteRepo();
    const harmless = { tool: 'Bash', args: { command: 'git status' }, context, run: runOf(input) };
    await plant(
      input,
      JSON.stringify({
        id: '0190a3b4-0000-7000-8000-000000000001',
        redeem: { key: 'gatehouse-client:planted-1', body: JSON.stringify(harmless) },
      }),
    );
    await expectFreshApproval(await hook(input, ['--wait', '0']));
  });

  it("a redeem body citing another call's granted approval: not allowed, and that grant is not spent", async () => {
    const other = await grantedElsewhere();
    const input = deleteRepo();
    const body = {
      tool: other.input.tool_name,
      args: other.input.tool_input,
      context,
      run: runOf(input),
      approval_id: other.id,
    };
    await plant(
      input,
      JSON.stringify({ id: other.id, redeem: { key: 'gatehouse-client:planted-2', body: JSON.stringify(body) } }),
    );
    await expectFreshApproval(await hook(input, ['--wait', '0']), [other.id]);
    expect((await approval(other.id)).status).toBe('granted');
  });

  it("delete_repo's own redeem body citing another call's granted approval: not allowed", async () => {
    const other = await grantedElsewhere();
    const input = deleteRepo();
    const body = { tool: input.tool_name, args: input.tool_input, context, run: runOf(input), approval_id: other.id };
    await plant(
      input,
      JSON.stringify({ id: other.id, redeem: { key: 'gatehouse-client:planted-3', body: JSON.stringify(body) } }),
    );
    await expectFreshApproval(await hook(input, ['--wait', '0']), [other.id]);
    expect((await approval(other.id)).status).toBe('granted');
  });

  it("delete_repo's own redeem body citing another call's denied approval: that denial is not this call's answer", async () => {
    const otherInput = preToolUse('mcp__github__create_issue', { repo: 'acme/shop', title: `Denied ${sessions}` });
    const otherId = approvalIdIn(reasonOf(await hook(otherInput, ['--wait', '0'])));
    const denied = await callJson(base, 'POST', `/approvals/${otherId}/deny`, OPERATOR, { message: 'not that issue' });
    expect(denied.status).toBe(200);
    const input = deleteRepo();
    const body = { tool: input.tool_name, args: input.tool_input, context, run: runOf(input), approval_id: otherId };
    await plant(
      input,
      JSON.stringify({ id: otherId, redeem: { key: 'gatehouse-client:planted-5', body: JSON.stringify(body) } }),
    );
    const r = await hook(input, ['--wait', '0']);
    expect(reasonOf(r)).not.toContain('not that issue');
    await expectFreshApproval(r, [otherId]);
  });

  it("an entry naming another call's granted approval (no redeem): never redeemed or named; a new approval is filed", async () => {
    const other = await grantedElsewhere();
    const input = deleteRepo();
    await plant(input, JSON.stringify({ id: other.id }));
    await expectFreshApproval(await hook(input, ['--wait', '0']), [other.id]);
    expect((await approval(other.id)).status).toBe('granted');
    // --on-pending ask hands only this call's own pending approval to the person, never the planted one.
    const asked = deleteRepo();
    await plant(asked, JSON.stringify({ id: other.id }));
    await expectFreshApproval(await hook(asked, ['--wait', '0', '--on-pending', 'ask']), [other.id], 'ask');
  });

  it('a redeem body with a repeated key (the harmless call first, delete_repo last): not allowed', async () => {
    const other = await grantedElsewhere();
    const input = deleteRepo();
    const json = JSON.stringify;
    // Read first-wins it is the granted call; last-wins, delete_repo's: the one strict reading refuses it.
    const body = `{"tool":${json(other.input.tool_name)},"args":${json(other.input.tool_input)},"context":${json(context)},"run":${json(runOf(input))},"approval_id":${json(other.id)},"tool":${json(input.tool_name)},"args":${json(input.tool_input)}}`;
    await plant(input, json({ id: other.id, redeem: { key: 'gatehouse-client:planted-4', body } }));
    await expectFreshApproval(await hook(input, ['--wait', '0']), [other.id]);
    expect((await approval(other.id)).status).toBe('granted');
  });

  it('malformed state files fail closed: never allow, the call decided afresh', async () => {
    for (const planted of [
      '{"id": ',
      'null',
      '[]',
      '{"id": 7}',
      '{"id": ""}',
      '{"id": "x", "redeem": "y"}',
      '{"id": "x", "extra": 1}',
      '{"id": "x", "redeem": {"key": "k"}}',
    ]) {
      const input = deleteRepo();
      await plant(input, planted);
      await expectFreshApproval(await hook(input, ['--wait', '0']));
    }
    // Not even the store's own wrapper: a file that is not JSON at all.
    const input = deleteRepo();
    const file = join(
      state,
      'approvals',
      `${createHash('sha256')
        .update(await keyOf(input))
        .digest('hex')
        .slice(0, 40)}.json`,
    );
    writeFileSync(file, '\u0000 not json');
    await expectFreshApproval(await hook(input, ['--wait', '0']));
  });
});

// PostToolUse against a Gatehouse whose policy guards what Read (a built-in tool) and an MCP tool return.
describe('gatehouse hook claude-code after the call (PostToolUse)', () => {
  let results: TestApp;
  let url: string;
  const GITHUB_TOKEN = `ghp_${'a1B2c3D4e5'.repeat(4)}`;
  beforeAll(async () => {
    results = await createTestApp({
      policyDir: 'test/fixtures/policies/claude-code-results',
      env: null,
      database: true,
    });
    url = `http://127.0.0.1:${await listenLoopback(results.app)}`;
  }, 180_000);
  afterAll(async () => results?.close());
  const postHook = (input: object, args: string[] = []) => hook(input, args, { GATEHOUSE_URL: url });
  const readOf = (content: string) => ({
    type: 'text',
    file: { filePath: `${PROJECT}/notes.txt`, content, numLines: 1, startLine: 1, totalLines: 1 },
  });

  it('a result the guards let through: exit 0 and no output, so Claude Code hands it on as it is', async () => {
    const r = await postHook(postToolUse('Read', { file_path: `${PROJECT}/notes.txt` }, readOf('all fine')));
    expect(r).toMatchObject({ code: 0, stdout: '' });
  });

  it('a built-in tool whose output holds a credential: block, the reason saying it was withheld, never the value', async () => {
    const r = await postHook(postToolUse('Read', { file_path: `${PROJECT}/.env` }, readOf(`TOKEN=${GITHUB_TOKEN}`)));
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { decision: string; reason: string; hookSpecificOutput: object };
    expect(out.decision).toBe('block');
    expect(out.reason).toMatch(/withheld/);
    expect(out.reason).toMatch(/it may not replace a built-in tool's/);
    // The output replaced by the message where Claude Code honours it (a built-in tool: updatedToolOutput only).
    expect(out.hookSpecificOutput).toEqual({
      hookEventName: 'PostToolUse',
      updatedToolOutput: expect.stringMatching(/^The output of the "Read" action was withheld by policy/),
    });
    expect(r.stdout).not.toContain(GITHUB_TOKEN);
  });

  it('a built-in tool whose output a guard would redact: block, naming what was found and where', async () => {
    const r = await postHook(
      postToolUse('Read', { file_path: `${PROJECT}/notes.txt` }, readOf('mail ann@example.com')),
    );
    const out = JSON.parse(r.stdout) as { decision: string; reason: string; hookSpecificOutput: object };
    expect(out.decision).toBe('block');
    expect(out.reason).toContain('email at /*/*');
    expect(out.reason).toMatch(/it may not replace a built-in tool's output/);
    expect(out.hookSpecificOutput).toEqual({
      hookEventName: 'PostToolUse',
      updatedToolOutput: readOf('mail [REDACTED:email]'),
    });
    expect(r.stdout).not.toContain('ann@example.com');
  });

  it('an MCP tool: its output replaced by the redacted one (updatedMCPToolOutput), no block', async () => {
    const response = [{ type: 'text', text: 'contact: ann@example.com' }];
    const r = await postHook(postToolUse('mcp__crm__lookup', { customer: 'C1' }, response));
    const out = JSON.parse(r.stdout) as { decision?: string; hookSpecificOutput: Record<string, unknown> };
    expect(out.decision).toBeUndefined();
    const redacted = [{ type: 'text', text: 'contact: [REDACTED:email]' }];
    expect(out.hookSpecificOutput).toEqual({
      hookEventName: 'PostToolUse',
      updatedToolOutput: redacted,
      updatedMCPToolOutput: redacted,
      additionalContext:
        'Gatehouse redacted email at /0/* in the output of "mcp__crm__lookup". Do not try to recover what was redacted.',
    });
  });

  it('an MCP tool whose output is withheld: block, and the output replaced by the message', async () => {
    const response = [{ type: 'text', text: `key ${GITHUB_TOKEN}` }];
    const r = await postHook(postToolUse('mcp__crm__lookup', { customer: 'C1' }, response));
    const out = JSON.parse(r.stdout) as {
      decision: string;
      reason: string;
      hookSpecificOutput: Record<string, unknown>;
    };
    expect(out.decision).toBe('block');
    expect(out.hookSpecificOutput.updatedMCPToolOutput).toEqual([{ type: 'text', text: out.reason }]);
    expect(out.hookSpecificOutput.updatedToolOutput).toEqual([{ type: 'text', text: out.reason }]);
    expect(r.stdout).not.toContain(GITHUB_TOKEN);
  });

  it("a result held for an operator's review: unanswered within --wait, block naming the review", async () => {
    const response = [{ type: 'text', text: 'see TICKET-1234' }];
    const r = await postHook(postToolUse('mcp__crm__lookup', { customer: 'C2' }, response), ['--wait', '0']);
    const out = JSON.parse(r.stdout) as { decision: string; reason: string };
    expect(out.decision).toBe('block');
    expect(out.reason).toMatch(
      /^The output of the "mcp__crm__lookup" action is held for an operator's review \(.*\)\. .*\(Gatehouse review [0-9a-f-]{36}: pending\.\)$/,
    );
    expect(r.stdout).not.toContain('TICKET-1234');
  });

  it('fails closed: Gatehouse unreachable, or not configured, blocks', async () => {
    const port = await freeTcpPort();
    const input = postToolUse('mcp__crm__lookup', { customer: 'C3' }, [{ type: 'text', text: 'fine' }]);
    const down = await hook(input, ['--wait', '0'], { GATEHOUSE_URL: `http://127.0.0.1:${port}` });
    expect(down.code).toBe(0);
    expect(JSON.parse(down.stdout)).toMatchObject({
      decision: 'block',
      reason: expect.stringMatching(/withheld: Gatehouse could not check it/),
    });
    const unset = await hook(input, [], { GATEHOUSE_URL: '' });
    expect(JSON.parse(unset.stdout)).toMatchObject({
      decision: 'block',
      reason: expect.stringMatching(/not configured/),
    });
  });
});

describe('the Claude Code mapping', () => {
  it('parses a PreToolUse input and refuses what is not one', () => {
    expect(
      parseHookInput(JSON.stringify(preToolUse('Edit', { file_path: '/a' }, { session_id: 's1', cwd: '/w' }))),
    ).toEqual({
      event: 'PreToolUse',
      sessionId: 's1',
      cwd: '/w',
      toolName: 'Edit',
      toolInput: { file_path: '/a' },
    });
    expect(parseHookInput(JSON.stringify(postToolUse('Read', { file_path: '/a' }, 'text')))).toMatchObject({
      event: 'PostToolUse',
      toolResponse: 'text',
    });
    const problem = (o: object | string) =>
      (parseHookInput(typeof o === 'string' ? o : JSON.stringify(o)) as { problem?: string }).problem;
    expect(problem('nope')).toMatch(/not JSON/);
    expect(problem({ ...preToolUse('Bash', {}), tool_input: 'ls' })).toMatch(/tool_input/);
    expect(problem({ ...preToolUse('Bash', {}), tool_name: '' })).toMatch(/tool_name/);
    expect(problem({ ...preToolUse('Bash', {}), session_id: 7 })).toMatch(/session_id/);
    expect(problem({ ...preToolUse('Bash', {}), cwd: null })).toMatch(/cwd/);
    expect(problem({ ...preToolUse('Bash', {}), hook_event_name: 'Stop' })).toMatch(/PreToolUse or PostToolUse/);
    const { tool_response: _r, ...noResponse } = postToolUse('Read', {}, 'x');
    expect(problem(noResponse)).toMatch(/tool_response/);
  });

  it('directories are absolute, normalised and end in /; a relative one is left out of the context', () => {
    expect(directory('/home/ann/shop')).toBe('/home/ann/shop/');
    expect(directory('/home/ann/shop/')).toBe('/home/ann/shop/');
    expect(directory('/home//ann/./x/../shop')).toBe('/home/ann/shop/');
    expect(directory('/')).toBe('/');
    expect(directory('shop')).toBeUndefined();
    expect(directory('')).toBeUndefined();
    expect(directory('/a\0b')).toBeUndefined();
    const input = { sessionId: 's', cwd: '/w/sub', toolName: 'Bash', toolInput: { command: 'ls' } };
    expect(toolCallOf(input, '/w')).toEqual({
      tool: 'Bash',
      args: { command: 'ls' },
      context: { cwd: '/w/sub/', project_dir: '/w/' },
    });
    expect(toolCallOf(input, undefined).context).toEqual({ cwd: '/w/sub/', project_dir: '/w/sub/' });
    expect(toolCallOf({ ...input, cwd: 'rel' }, 'also-rel').context).toEqual({});
  });

  it('an allow of an amended call carries the amended arguments as updatedInput', () => {
    const out = hookOutputOf(
      { decision: 'allow', message: '', reason: 'granted', amended: { args: { n: 2 }, paths: ['n'] } },
      'deny',
      'Write',
    );
    expect(out.hookSpecificOutput).toMatchObject({ permissionDecision: 'allow', updatedInput: { n: 2 } });
    expect(out.hookSpecificOutput.permissionDecisionReason).toContain('"Write"');
    expect(out.hookSpecificOutput.additionalContext).toContain('changed: n');
  });

  it('maps each gate() result to a permission decision; abort also stops Claude Code', () => {
    const base = { message: 'M.', reason: 'R' };
    expect(hookOutputOf({ ...base, decision: 'allow' }, 'deny').hookSpecificOutput.permissionDecision).toBe('allow');
    expect(hookOutputOf({ ...base, decision: 'deny' }, 'ask').hookSpecificOutput).toMatchObject({
      permissionDecision: 'deny',
      permissionDecisionReason: 'M.',
    });
    expect(hookOutputOf({ ...base, decision: 'abort' }, 'deny')).toEqual({
      continue: false,
      stopReason: "Gatehouse ended this session's run: R",
      hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: 'M.' },
    });
    const pending = {
      ...base,
      decision: 'require_approval' as const,
      approval: { id: 'A1', status: 'pending' as const, expiresAt: null },
    };
    expect(hookOutputOf(pending, 'ask').hookSpecificOutput.permissionDecision).toBe('ask');
    expect(hookOutputOf(pending, 'deny').hookSpecificOutput.permissionDecisionReason).toBe(
      'M. (Gatehouse approval A1: pending.) Once an operator grants it, retry the same call unchanged: the grant is used once.',
    );
    // Only a pending approval may be handed to the person: expired or withdrawn is a deny, even with ask.
    const expired = { ...pending, approval: { ...pending.approval, status: 'expired' as const } };
    expect(hookOutputOf(expired, 'ask').hookSpecificOutput).toMatchObject({
      permissionDecision: 'deny',
      permissionDecisionReason: 'M. (Gatehouse approval A1: expired.)',
    });
    expect(hookOutputOf({ ...base, decision: 'require_approval' }, 'ask').hookSpecificOutput.permissionDecision).toBe(
      'deny',
    );
    // A decision this version does not know never allows.
    expect(hookOutputOf({ ...base, decision: 'maybe' as 'allow' }, 'ask').hookSpecificOutput.permissionDecision).toBe(
      'deny',
    );
  });

  it('maps each guardResult() answer to a PostToolUse output, the withheld MCP output in the shape it came', () => {
    const input = (toolName: string, toolResponse: unknown) => ({
      event: 'PostToolUse' as const,
      sessionId: 's',
      cwd: '/w',
      toolName,
      toolInput: {},
      toolResponse,
    });
    const allowed = { decision: 'allow' as const, message: 'M.', reason: 'R', findings: [], body: {} as never };
    expect(postHookOutputOf({ ...allowed, output: 'x', redacted: false }, input('Read', 'x'))).toBeUndefined();
    const withheld = { decision: 'deny' as const, message: 'Withheld.', reason: 'R' };
    const shapes: [unknown, unknown][] = [
      [[{ type: 'text', text: 'k' }], [{ type: 'text', text: 'Withheld.' }]],
      [{ content: [{ type: 'text', text: 'k' }] }, { content: [{ type: 'text', text: 'Withheld.' }], isError: true }],
      ['k', 'Withheld.'],
    ];
    for (const [response, replaced] of shapes)
      expect(postHookOutputOf(withheld, input('mcp__s__t', response))?.hookSpecificOutput.updatedMCPToolOutput).toEqual(
        replaced,
      );
    const review = {
      decision: 'require_approval' as const,
      message: 'Held.',
      reason: 'R',
      approval: { id: 'A9', status: 'pending' as const, expiresAt: null },
    };
    expect(postHookOutputOf(review, input('Read', 'x'))?.reason).toMatch(/^Held\. \(Gatehouse review A9: pending\.\)/);
  });
});
