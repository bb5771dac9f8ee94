// gatehouse-pdp/openai-agents with the real `@openai/agents` (its Runner, and its own ScriptedModel from
// `@openai/agents/testing` scripting the model's function calls) against a real Gatehouse: nothing
// Gatehouse refused runs (each tool writes a ledger), a refusal's message is in the model's next
// input, an abort ends the run, an approval is granted over REST and redeemed once by the tool's
// gate(), an approval that expires is reported to the model (never silently filed again), a 503 in
// needsApproval is retried per Retry-After, a restarted process (new client, same fileMemory, the run
// state from its string) resumes the same approval, and a redeem whose answer is lost runs the tool once.
import { Agent, RunState, Runner, ToolCallError, tool } from '@openai/agents';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fileMemory, type GatehouseClient } from '../../src/client/index.js';
import {
  GatehouseAbortError,
  gatedTool,
  gatehouseOutputGuardrail,
  settleInterruptions,
} from '../../src/client/openai-agents.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import {
  expiredMessage,
  firstPending,
  type Gatehouse,
  loseFirstRedeemAnswer,
  newRunId,
  startGatehouse,
} from './adapters-fixture.js';

let gh: Gatehouse;
beforeAll(async () => {
  gh = await startGatehouse();
});
afterAll(async () => gh.close());

const runner = new Runner({ tracingDisabled: true });

/** The run's own context: where the tools read the run id from. */
interface RunCtx {
  runId: string;
}

/** The tools of the fixture policy, gated; each execute writes what it ran to `ledger`. */
function fixtureTools(client: GatehouseClient, ledger: string[]) {
  const o = { runId: (ctx: { context: RunCtx }) => ctx.context.runId };
  return [
    gatedTool(
      {
        name: 'lookup_order',
        description: 'Look an order up',
        parameters: z.object({ order: z.string() }),
        execute: async ({ order }) => {
          ledger.push(`lookup_order ${order}`);
          return `order ${order}: shipped`;
        },
      },
      client,
      o,
    ),
    gatedTool(
      {
        name: 'wipe_orders',
        description: 'Delete every order',
        parameters: z.object({}),
        execute: async () => {
          ledger.push('wipe_orders');
          return 'wiped';
        },
      },
      client,
      o,
    ),
    gatedTool(
      {
        name: 'drop_database',
        description: 'Drop the database',
        parameters: z.object({}),
        execute: async () => {
          ledger.push('drop_database');
          return 'dropped';
        },
      },
      client,
      o,
    ),
    gatedTool(
      {
        name: 'refund',
        description: 'Refund an order',
        parameters: z.object({ order: z.string(), amount: z.number() }),
        execute: async ({ order, amount }) => {
          ledger.push(`refund ${order} ${amount}`);
          return `refunded ${amount}`;
        },
      },
      client,
      o,
    ),
  ];
}

let calls = 0;
const call = (name: string, args: Record<string, unknown>) => functionCall(name, args, { callId: `call-${++calls}` });

function agentWith(client: GatehouseClient, ledger: string[], model: ScriptedModel) {
  return new Agent<RunCtx>({
    name: 'support',
    instructions: 'Help the customer.',
    model,
    tools: fixtureTools(client, ledger),
  });
}

/** The function call outputs the model was given in its call number `i`, by tool name. */
function outputsIn(model: ScriptedModel, i: number): { name: string; output: unknown }[] {
  const input = model.calls[i]!.request.input;
  if (typeof input === 'string') return [];
  return input.flatMap((item) =>
    item.type === 'function_call_result' ? [{ name: item.name, output: item.output }] : [],
  );
}

/** An output's text (the SDK sends a string output as `{type: 'text', text}`). */
const textOf = (output: unknown): string =>
  typeof output === 'string' ? output : ((output as { text?: string }).text ?? JSON.stringify(output));

describe('the decisions without a human', () => {
  it('runs the allowed tool; a denied call interrupts, is rejected with the message, and the model reads it', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const model = new ScriptedModel([
      [call('lookup_order', { order: 'A1' }), call('wipe_orders', {})],
      [assistantMessage('A1 shipped; I may not wipe.')],
    ]);
    const agent = agentWith(client, ledger, model);
    const first = await runner.run(agent, 'Look up A1 and wipe all orders.', { context: { runId } });
    expect(first.interruptions.map((i) => i.name)).toEqual(['wipe_orders']);
    const { settled, pending } = await settleInterruptions(first, client, { maxWaitMs: 0 });
    expect(pending).toBe(false);
    expect(settled).toMatchObject([
      {
        tool: 'wipe_orders',
        outcome: 'rejected',
        message: expect.stringMatching(/^The "wipe_orders" action was not approved by policy/),
      },
    ]);
    const done = await runner.run(agent, first.state);
    expect(done.finalOutput).toBe('A1 shipped; I may not wipe.');
    expect(ledger).toEqual(['lookup_order A1']);
    const shown = outputsIn(model, 1);
    expect(textOf(shown.find((s) => s.name === 'lookup_order')?.output)).toBe('order A1: shipped');
    expect(textOf(shown.find((s) => s.name === 'wipe_orders')?.output)).toMatch(
      /^The "wipe_orders" action was not approved by policy\. Reason: never from an agent\./,
    );
    expect(await gh.approvalsOf(runId)).toEqual([]); // a refusal files nothing
  });

  it('an abort: the run stops at the interruption, settle throws GatehouseAbortError, nothing ran, no further model call', async () => {
    const ledger: string[] = [];
    const client = gh.agent();
    const model = new ScriptedModel([[call('drop_database', {})], [assistantMessage('unreachable')]]);
    const agent = agentWith(client, ledger, model);
    const first = await runner.run(agent, 'Drop it.', { context: { runId: newRunId() } });
    await expect(settleInterruptions(first, client)).rejects.toThrow(GatehouseAbortError);
    await expect(settleInterruptions(first, client)).rejects.toThrow(
      /^The "drop_database" action crossed a hard limit of this run/,
    );
    expect(ledger).toEqual([]);
    expect(model.calls).toHaveLength(1);
  });

  it('an abort at execute (a host that approved it anyway): the run fails with GatehouseAbortError, the tool never ran', async () => {
    const ledger: string[] = [];
    const client = gh.agent();
    const model = new ScriptedModel([[call('drop_database', {})], [assistantMessage('unreachable')]]);
    const agent = agentWith(client, ledger, model);
    const first = await runner.run(agent, 'Drop it.', { context: { runId: newRunId() } });
    first.state.approve(first.interruptions[0]!);
    const error = await runner.run(agent, first.state).then(
      () => undefined,
      (e: unknown) => e,
    );
    // The SDK wraps what a tool throws past its errorFunction in a ToolCallError.
    expect(error).toBeInstanceOf(ToolCallError);
    expect((error as ToolCallError).error).toBeInstanceOf(GatehouseAbortError);
    expect((error as ToolCallError).error.message).toMatch(
      /^The "drop_database" action crossed a hard limit of this run/,
    );
    expect(ledger).toEqual([]);
    expect(model.calls).toHaveLength(1);
  });

  it('Gatehouse unreachable: the call interrupts and is rejected (fails closed), nothing runs', async () => {
    const ledger: string[] = [];
    const down = gh.agent({ url: 'http://127.0.0.1:1' });
    const model = new ScriptedModel([
      [call('lookup_order', { order: 'A3' })],
      [assistantMessage('Gatehouse is down.')],
    ]);
    const agent = agentWith(down, ledger, model);
    const first = await runner.run(agent, 'Look up A3.', { context: { runId: newRunId() } });
    const { settled } = await settleInterruptions(first, down);
    expect(settled).toMatchObject([
      {
        outcome: 'rejected',
        message: expect.stringMatching(/not run: Gatehouse could not check it against policy \(unreachable\)/),
      },
    ]);
    await runner.run(agent, first.state);
    expect(ledger).toEqual([]);
  });
});

describe('an approval: filed by needsApproval, decided in Gatehouse, redeemed by execute', () => {
  it('interrupts; granted over REST, settle approves, the resumed run runs the tool exactly once', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const model = new ScriptedModel([[call('refund', { order: 'R1', amount: 150 })], [assistantMessage('Refunded.')]]);
    const agent = agentWith(client, ledger, model);
    const first = await runner.run(agent, 'Refund R1.', { context: { runId } });
    expect(first.interruptions.map((i) => i.name)).toEqual(['refund']);
    const [filed] = await gh.approvalsOf(runId);
    expect(filed?.status).toBe('pending');

    const early = await settleInterruptions(first, client, { maxWaitMs: 0 });
    expect(early.pending).toBe(true);
    expect(early.settled).toMatchObject([{ outcome: 'pending', approval: { id: filed!.id, status: 'pending' } }]);

    await gh.operator.approvals.grant(filed!.id, { note: 'customer called' });
    const { settled, pending } = await settleInterruptions(first, client, { maxWaitMs: 0 });
    expect(pending).toBe(false);
    expect(settled).toMatchObject([{ outcome: 'approved', approval: { id: filed!.id, status: 'granted' } }]);
    const done = await runner.run(agent, first.state);
    expect(done.finalOutput).toBe('Refunded.');
    expect(ledger).toEqual(['refund R1 150']);
    expect(outputsIn(model, 1).map((s) => [s.name, textOf(s.output)])).toEqual([['refund', 'refunded 150']]);
    expect((await gh.approvalsOf(runId)).map((a) => [a.id, a.status])).toEqual([[filed!.id, 'consumed']]);
  });

  it('a grant an operator amended: the resumed run runs the amended input, and the model reads what changed', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const model = new ScriptedModel([[call('refund', { order: 'M2', amount: 150 })], [assistantMessage('Done.')]]);
    const agent = agentWith(client, ledger, model);
    const first = await runner.run(agent, 'Refund M2.', { context: { runId } });
    const [filed] = await gh.approvalsOf(runId);
    await gh.operator.approvals.grant(filed!.id, { args: { order: 'M2', amount: 120 } });
    const { settled } = await settleInterruptions(first, client, { maxWaitMs: 0 });
    expect(settled).toMatchObject([{ outcome: 'approved' }]);
    await runner.run(agent, first.state);
    expect(ledger).toEqual(['refund M2 120']);
    const [shown] = outputsIn(model, 1).map((o) => textOf(o.output));
    expect(shown).toMatch(/amended .*changed: amount/);
    expect(shown).toMatch(/\nrefunded 120$/);
    expect((await gh.approvalsOf(runId)).map((a) => a.status)).toEqual(['consumed']);
  });

  it('settle waits for the operator: a grant while it waits resolves it', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const model = new ScriptedModel([[call('refund', { order: 'R2', amount: 150 })], [assistantMessage('Refunded.')]]);
    const agent = agentWith(client, ledger, model);
    const first = await runner.run(agent, 'Refund R2.', { context: { runId } });
    const waiting = firstPending<{ id: string; callId: string }>();
    const settling = settleInterruptions(first, client, { maxWaitMs: 60_000, onPending: waiting.onPending });
    const { id } = await waiting.seen;
    expect(ledger).toEqual([]);
    await gh.operator.approvals.grant(id);
    expect((await settling).settled).toMatchObject([{ outcome: 'approved' }]);
    await runner.run(agent, first.state);
    expect(ledger).toEqual(['refund R2 150']);
  });

  it("an operator's denial: rejected with the operator's reason, which the model reads; the tool never runs", async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const model = new ScriptedModel([[call('refund', { order: 'R3', amount: 150 })], [assistantMessage('Declined.')]]);
    const agent = agentWith(client, ledger, model);
    const first = await runner.run(agent, 'Refund R3.', { context: { runId } });
    const [filed] = await gh.approvalsOf(runId);
    await gh.operator.approvals.deny(filed!.id, { message: 'duplicate of an earlier refund' });
    const { settled } = await settleInterruptions(first, client, { maxWaitMs: 0 });
    expect(settled).toMatchObject([
      { outcome: 'rejected', message: expect.stringContaining('duplicate of an earlier refund') },
    ]);
    await runner.run(agent, first.state);
    expect(ledger).toEqual([]);
    expect(textOf(outputsIn(model, 1)[0]?.output)).toContain('duplicate of an earlier refund');
  });

  it('a host that approves what Gatehouse has not granted gets nothing run: execute refuses when no grant comes in time', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const model = new ScriptedModel([[call('refund', { order: 'R4', amount: 150 })], [assistantMessage('Waiting.')]]);
    const agent = new Agent<RunCtx>({
      name: 'support',
      model,
      tools: [
        gatedTool(
          {
            name: 'refund',
            description: 'Refund an order',
            parameters: z.object({ order: z.string(), amount: z.number() }),
            execute: async ({ order }) => {
              ledger.push(`refund ${order}`);
              return 'refunded';
            },
          },
          client,
          { runId: (ctx) => ctx.context.runId, maxWaitMs: 0 },
        ),
      ],
    });
    const first = await runner.run(agent, 'Refund R4.', { context: { runId } });
    first.state.approve(first.interruptions[0]!);
    await runner.run(agent, first.state);
    expect(ledger).toEqual([]);
    expect(textOf(outputsIn(model, 1)[0]?.output)).toMatch(/^The "refund" action needs an operator's approval/);
    expect((await gh.approvalsOf(runId)).map((a) => a.status)).toEqual(['pending']);
  });

  it('a restart mid-wait: a new process (new client, same fileMemory, the state from its string) resumes the same approval; the tool runs once', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const dir = await gh.tempDir();
    const before = gh.agent({ memory: fileMemory(dir) });
    const model = new ScriptedModel([[call('refund', { order: 'R5', amount: 150 })], [assistantMessage('Refunded.')]]);
    const first = await runner.run(agentWith(before, ledger, model), 'Refund R5.', { context: { runId } });
    const gone = new AbortController();
    const waiting = firstPending<{ id: string }>();
    const interrupted = settleInterruptions(first, before, { signal: gone.signal, onPending: waiting.onPending });
    const { id } = await waiting.seen;
    gone.abort();
    expect((await interrupted).settled).toMatchObject([{ outcome: 'pending', approval: { id } }]);
    const saved = first.state.toString();

    // The new process: its own client on the same memory, its own tools, the run state read back.
    const after = gh.agent({ memory: fileMemory(dir) });
    const agent = agentWith(after, ledger, model);
    const state = await RunState.fromString<RunCtx, typeof agent>(agent, saved);
    await gh.operator.approvals.grant(id);
    const { settled } = await settleInterruptions(state, after, { maxWaitMs: 0 });
    expect(settled).toMatchObject([{ outcome: 'approved', approval: { id } }]);
    const done = await runner.run(agent, state);
    expect(done.finalOutput).toBe('Refunded.');
    expect(ledger).toEqual(['refund R5 150']);
    expect((await gh.approvalsOf(runId)).map((a) => [a.id, a.status])).toEqual([[id, 'consumed']]);
  });

  it('a redeem whose answer is lost is sent again under its key: the tool runs once, the grant is consumed once', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const lossy = loseFirstRedeemAnswer();
    const client = gh.agent({ fetch: lossy.fetch });
    const model = new ScriptedModel([[call('refund', { order: 'R6', amount: 150 })], [assistantMessage('Refunded.')]]);
    const agent = agentWith(client, ledger, model);
    const first = await runner.run(agent, 'Refund R6.', { context: { runId } });
    const [filed] = await gh.approvalsOf(runId);
    await gh.operator.approvals.grant(filed!.id);
    await settleInterruptions(first, client, { maxWaitMs: 0 });
    await runner.run(agent, first.state);
    expect(lossy.lost()).toBe(1);
    expect(ledger).toEqual(['refund R6 150']);
    expect((await gh.approvalsOf(runId)).map((a) => [a.id, a.status])).toEqual([[filed!.id, 'consumed']]);
  });

  it('an allowed call needs no approval and runs at once', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const model = new ScriptedModel([[call('refund', { order: 'S1', amount: 40 })], [assistantMessage('Refunded.')]]);
    const done = await runner.run(agentWith(client, ledger, model), 'Refund S1.', { context: { runId } });
    expect(done.interruptions).toEqual([]);
    expect(ledger).toEqual(['refund S1 40']);
    expect(await gh.approvalsOf(runId)).toEqual([]);
  });
});

describe('an approval that expires', () => {
  it('while the run is interrupted: settle rejects with the expiry, the model reads it, nothing runs, nothing is filed again', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const model = new ScriptedModel([
      [call('refund', { order: 'E1', amount: 150 })],
      [assistantMessage('It expired.')],
    ]);
    const agent = agentWith(client, ledger, model);
    const first = await runner.run(agent, 'Refund E1.', { context: { runId } });
    const [filed] = await gh.approvalsOf(runId);
    await gh.expire(filed!.id);
    const { settled, pending } = await settleInterruptions(first, client, { maxWaitMs: 0 });
    expect(pending).toBe(false);
    expect(settled).toMatchObject([
      { outcome: 'rejected', message: expiredMessage('refund'), approval: { id: filed!.id, status: 'expired' } },
    ]);
    await runner.run(agent, first.state);
    expect(ledger).toEqual([]);
    expect(textOf(outputsIn(model, 1)[0]?.output)).toBe(expiredMessage('refund'));
    expect((await gh.approvalsOf(runId)).map((a) => [a.id, a.status])).toEqual([[filed!.id, 'expired']]);
  });

  it('found expired by needsApproval (the same call made again): settle rejects with the expiry instead of filing anew', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const model = new ScriptedModel([
      [call('refund', { order: 'E2', amount: 150 })],
      [call('refund', { order: 'E2', amount: 150 })],
      [assistantMessage('It expired.')],
    ]);
    const agent = agentWith(client, ledger, model);
    await runner.run(agent, 'Refund E2.', { context: { runId } });
    const [filed] = await gh.approvalsOf(runId);
    await gh.expire(filed!.id);
    // The host drops that run; a new one makes the same call.
    const again = await runner.run(agent, 'Refund E2.', { context: { runId } });
    expect(again.interruptions.map((i) => i.name)).toEqual(['refund']);
    const { settled } = await settleInterruptions(again, client, { maxWaitMs: 0 });
    expect(settled).toMatchObject([
      { outcome: 'rejected', message: expiredMessage('refund'), approval: { id: filed!.id, status: 'expired' } },
    ]);
    await runner.run(agent, again.state);
    expect(ledger).toEqual([]);
    expect(textOf(outputsIn(model, 2)[0]?.output)).toBe(expiredMessage('refund'));
    expect((await gh.approvalsOf(runId)).map((a) => [a.id, a.status])).toEqual([[filed!.id, 'expired']]);
  });
});

describe('a 503 in needsApproval', () => {
  it('is retried per its Retry-After: the allowed call runs without an interruption', async () => {
    let decides = 0;
    const proxy = await startFaultProxy(gh.url, (req) =>
      req.url === '/decide' && decides++ === 0 ? 'unavailable' : 'forward',
    );
    try {
      const ledger: string[] = [];
      const client = gh.agent({ url: proxy.url });
      const model = new ScriptedModel([[call('lookup_order', { order: 'U1' })], [assistantMessage('Shipped.')]]);
      const done = await runner.run(agentWith(client, ledger, model), 'Look up U1.', {
        context: { runId: newRunId() },
      });
      expect(done.interruptions).toEqual([]);
      expect(ledger).toEqual(['lookup_order U1']);
      expect(decides).toBe(3); // needsApproval's /decide twice (a 503, then its answer), then execute's
    } finally {
      await proxy.close();
    }
  });
});

describe('gatedTool', () => {
  it('refuses a needsApproval of its own: Gatehouse decides when a human is needed', () => {
    expect(() =>
      gatedTool(
        { name: 'x', description: 'x', parameters: z.object({}), needsApproval: true, execute: async () => 'x' },
        gh.agent(),
      ),
    ).toThrow(/needsApproval is Gatehouse's/);
  });

  it('leaves the interruptions of tools it did not gate to the host', async () => {
    const ledger: string[] = [];
    const client = gh.agent();
    const model = new ScriptedModel([[functionCall('own', {}, { callId: 'own-1' })]]);
    const agent = new Agent({
      name: 'x',
      model,
      tools: [
        tool({
          name: 'own',
          description: 'own',
          parameters: z.object({}),
          needsApproval: true,
          execute: async () => ledger.push('own'),
        }),
      ],
    });
    const first = await runner.run(agent, 'go');
    const { settled, pending } = await settleInterruptions(first, client, { maxWaitMs: 0 });
    expect(settled).toMatchObject([{ tool: 'own', outcome: 'skipped' }]);
    expect(pending).toBe(false);
    expect(first.state.getInterruptions()).toHaveLength(1); // neither approved nor rejected
  });
});

describe('results through the result guards: gatedTool({guardResults}) and gatehouseOutputGuardrail', () => {
  const GITHUB_TOKEN = `ghp_${'a1B2c3D4e5'.repeat(4)}`;
  const lookup = (client: GatehouseClient, ledger: string[], guardResults: boolean) =>
    gatedTool(
      {
        name: 'lookup_order',
        description: 'Look an order up',
        parameters: z.object({ order: z.string() }),
        execute: async ({ order }) => {
          ledger.push(`lookup_order ${order}`);
          return `order ${order}: shipped`;
        },
      },
      client,
      { runId: (ctx: { context: RunCtx }) => ctx.context.runId, guardResults },
    );
  const run = async (order: string, guardResults = true) => {
    const ledger: string[] = [];
    const model = new ScriptedModel([[call('lookup_order', { order })], [assistantMessage('Done.')]]);
    const agent = new Agent<RunCtx>({
      name: 'support',
      instructions: 'Help.',
      model,
      tools: [lookup(gh.agent(), ledger, guardResults)],
    });
    const result = await runner.run(agent, 'Look it up.', { context: { runId: newRunId() } });
    return { ledger, model, result };
  };

  it('redacted: the model reads the output with the finding replaced; the guardrail result says so', async () => {
    const { ledger, model, result } = await run('ann@example.com');
    expect(ledger).toEqual(['lookup_order ann@example.com']);
    expect(outputsIn(model, 1).map((o) => textOf(o.output))).toEqual(['order [REDACTED:email]: shipped']);
    expect(result.toolOutputGuardrailResults).toMatchObject([
      {
        guardrail: { type: 'tool_output', name: 'gatehouse' },
        output: {
          behavior: { type: 'rejectContent' },
          outputInfo: { gatehouse: 'redacted', findings: [{ guard: 'lookup-pii', type: 'email', path: '/' }] },
        },
      },
    ]);
  });

  it('withheld: the tool ran, the model reads the message saying so, never the value', async () => {
    const { ledger, model, result } = await run(GITHUB_TOKEN);
    expect(ledger).toEqual([`lookup_order ${GITHUB_TOKEN}`]);
    const [shown] = outputsIn(model, 1).map((o) => textOf(o.output));
    expect(shown).toMatch(/^The output of the "lookup_order" action was withheld by policy\./);
    expect(shown).not.toContain(GITHUB_TOKEN);
    expect(result.toolOutputGuardrailResults[0]?.output.outputInfo).toEqual({ gatehouse: 'deny' });
  });

  it('allowed as it is: the output untouched, the guardrail allows', async () => {
    const { model, result } = await run('A7');
    expect(outputsIn(model, 1).map((o) => textOf(o.output))).toEqual(['order A7: shipped']);
    expect(result.toolOutputGuardrailResults[0]?.output.behavior).toEqual({ type: 'allow' });
  });

  it("a result held for an operator's review: the guardrail waits; not granted within maxWaitMs, withheld naming it", async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const held = gatedTool(
      {
        name: 'lookup_order',
        description: 'Look an order up',
        parameters: z.object({ order: z.string() }),
        execute: async ({ order }) => {
          ledger.push(`lookup_order ${order}`);
          return `order ${order}: shipped`;
        },
      },
      gh.agent(),
      { runId, guardResults: true, maxWaitMs: 0 },
    );
    const model = new ScriptedModel([[call('lookup_order', { order: 'TICKET-1234' })], [assistantMessage('Done.')]]);
    const agent = new Agent<RunCtx>({ name: 'support', instructions: 'Help.', model, tools: [held] });
    const result = await runner.run(agent, 'Look it up.', { context: { runId } });
    const [shown] = outputsIn(model, 1).map((o) => textOf(o.output));
    expect(shown).toMatch(/^The output of the "lookup_order" action is held for an operator's review/);
    expect(shown).not.toContain('TICKET-1234');
    const [review] = await gh.approvalsOf(runId);
    expect(review).toMatchObject({ kind: 'pattern', status: 'pending', tool: 'lookup_order' });
    expect(result.toolOutputGuardrailResults[0]?.output.outputInfo).toMatchObject({
      gatehouse: 'require_approval',
      approval: { id: review?.id, status: 'pending' },
    });
  });

  it('without the option, no guardrail: results are handed on as they are', async () => {
    const { model, result } = await run('ann@example.com', false);
    expect(outputsIn(model, 1).map((o) => textOf(o.output))).toEqual(['order ann@example.com: shipped']);
    expect(result.toolOutputGuardrailResults).toEqual([]);
  });

  it('the guardrail on its own, on any SDK tool: Gatehouse unreachable withholds the output (fails closed)', async () => {
    const ledger: string[] = [];
    const down = gh.agent({ url: 'http://127.0.0.1:1' });
    const plain = tool({
      name: 'lookup_order',
      description: 'Look an order up',
      parameters: z.object({ order: z.string() }),
      outputGuardrails: [gatehouseOutputGuardrail(down, { maxRetryMs: 0 })],
      execute: async ({ order }) => {
        ledger.push(`lookup_order ${order}`);
        return `order ${order}: shipped`;
      },
    });
    const model = new ScriptedModel([[call('lookup_order', { order: 'A8' })], [assistantMessage('Done.')]]);
    const agent = new Agent<RunCtx>({ name: 'support', instructions: 'Help.', model, tools: [plain] });
    await runner.run(agent, 'Look it up.', { context: { runId: newRunId() } });
    expect(ledger).toEqual(['lookup_order A8']);
    const [shown] = outputsIn(model, 1).map((o) => textOf(o.output));
    expect(shown).toMatch(/^The output of the "lookup_order" action was withheld: Gatehouse could not check it/);
  });
});
