// `gatehouse-pdp/openai-agents`: Gatehouse as the OpenAI Agents SDK's (`@openai/agents`) tool approval and
// tool gate (docs/openai-agents.md). Three parts, used together:
//   gatedTool: the SDK's tool(), with `needsApproval` and `execute` backed by Gatehouse.
//     needsApproval (gatehouseNeedsApproval): true unless Gatehouse allows the call; for
//       require_approval it files the approval, so the run stops with an interruption.
//     execute: gate() right before the tool runs, which redeems the grant: the enforcement point.
//       allow → the tool runs; deny, or an approval not granted in time → the model message is the
//       tool's output; abort → GatehouseAbortError, which fails the run. A grant an operator amended
//       (docs/spec.md section 5.4) runs the tool with the amended input, and its output opens with a
//       line naming the changed paths (a tool with an outputSchema: the output as it is).
//   settleInterruptions: for each interruption of a gated tool, waits in Gatehouse for the operator
//     and approves or rejects it (with the model message) in the run state; resume with
//     run(agent, result.state).
// A refusal interrupts too (rather than being left to execute) so that nothing but Gatehouse's allow
// ever runs without passing settleInterruptions, and the SDK records it as a rejection with its reason.
import {
  defineToolOutputGuardrail,
  type FunctionTool,
  type RunContext,
  RunResult,
  RunState,
  type RunToolApprovalItem,
  type StreamedRunResult,
  type ToolInputParameters,
  type ToolOptions,
  type ToolOutputSchema,
  tool,
  ToolGuardrailFunctionOutputFactory,
  type ToolOutputGuardrailDefinition,
} from '@openai/agents';
import {
  type ApprovalRef,
  awaitOperator,
  askGatehouse,
  GatehouseAbortError,
  GatehouseRefusalError,
  GatehouseWithheldError,
  type PausedCall,
  type StepOptions,
  stepOptions,
} from './approval-pause.js';
import type { GatehouseClient, PendingApproval } from './index.js';
import { amendedNote } from './amended.js';
import type { RequestOptions } from './types.js';

export { GatehouseAbortError, GatehouseRefusalError, GatehouseWithheldError } from './approval-pause.js';

/**
 * `maxRetryMs`: how long needsApproval, execute and settleInterruptions retry a 503 per its Retry-After
 * (default 30 s; beyond it the call is refused). `onExpired`: an approval that expired is reported to
 * the model (default `report`) or replaced by a new one (`refile`).
 */
export interface AgentsGateOptions<Context = unknown> extends StepOptions {
  /**
   * The run the calls belong to: sent as `run.id`, and the scope of "one approval per call". A
   * function reads it from the run's context (the object given to run() as `context`).
   */
  runId?: string | ((runContext: RunContext<Context>) => string | undefined);
  /** Facts the host sets about where the calls run (spec section 5.3 `context`). */
  context?: Record<string, unknown>;
}

export interface GatedToolOptions<Context = unknown> extends AgentsGateOptions<Context> {
  /**
   * How long execute waits for an operator when the call still needs one, and (with `guardResults`)
   * the output guardrail for a review of the result; default the client's (10 minutes).
   */
  maxWaitMs?: number;
  onPending?: (approval: PendingApproval) => void;
  /** Add gatehouseOutputGuardrail to the tool's `outputGuardrails`: its results go through Gatehouse's result guards. */
  guardResults?: boolean;
}

/** The options of gatehouseOutputGuardrail: as a gated tool's, for the call the result came from. */
export interface OutputGuardrailOptions<Context = unknown> extends AgentsGateOptions<Context> {
  /** How long to wait for an operator's review of a result; default 10 minutes; 0 files it and withholds the result. */
  maxWaitMs?: number;
  onPending?: (approval: PendingApproval) => void;
  /** Prepended to the SDK's tool name to name it to Gatehouse (an MCP server's tools: `github.`). */
  prefix?: string;
}

/** What a Gatehouse needsApproval carries, so settleInterruptions knows its tools and how they ask. */
const GATEHOUSE = Symbol('gatehouse.openai-agents');

interface Marked {
  [GATEHOUSE]?: Marking;
}

interface Marking {
  tool: string;
  /** The call as this tool asks Gatehouse about it: its run id (from the run context) and context. */
  callOf(args: Record<string, unknown>, runContext: RunContext<unknown>): PausedCall;
  /** The tool's retry bound and expiry handling, for settleInterruptions' wait too. */
  step: StepOptions;
}

/** What needsApproval saw of a call, for settleInterruptions. */
interface Asked {
  /** The parsed arguments it was asked about. */
  args: Record<string, unknown>;
  /**
   * The approval held for the call had expired (and is forgotten): settleInterruptions rejects with
   * this, rather than wait on a new approval the model never asked for.
   */
  expired?: { message: string; approval: ApprovalRef };
}

/** Each gated call needsApproval was asked about, per run context and call id. */
const askedCalls = new WeakMap<object, Map<string, Asked>>();

/**
 * A `needsApproval` for the tool named `tool`: true unless Gatehouse allows the call (so a refusal
 * and an abort interrupt too, for settleInterruptions to reject or end the run); for require_approval
 * it files the approval in Gatehouse first. Gatehouse unreachable: true.
 */
export function gatehouseNeedsApproval<Context = unknown>(
  client: GatehouseClient,
  options: AgentsGateOptions<Context> & { tool: string },
): (runContext: RunContext<Context>, input: unknown, callId?: string) => Promise<boolean> {
  const { tool: name, ...gateOptions } = options;
  const step = stepOptions(gateOptions);
  const needsApproval = async (runContext: RunContext<Context>, input: unknown, callId?: string): Promise<boolean> => {
    const args = argsOf(input);
    if (args === undefined) return true;
    const asked: Asked = { args };
    if (callId !== undefined) {
      const calls = askedCalls.get(runContext) ?? new Map<string, Asked>();
      askedCalls.set(runContext, calls.set(callId, asked));
    }
    const ask = await askGatehouse(client, pausedCall(name, args, gateOptions, runContext), step);
    if (ask.kind === 'refuse' && ask.approval?.status === 'expired')
      asked.expired = { message: ask.message, approval: ask.approval };
    return ask.kind !== 'run';
  };
  const marking: Marking = {
    tool: name,
    step,
    callOf: (args, runContext) => pausedCall(name, args, gateOptions, runContext as RunContext<Context>),
  };
  Object.defineProperty(needsApproval, GATEHOUSE, { value: marking });
  return needsApproval;
}

/** The parsed arguments a gated tool's execute ran with, per run context and call id, for its output guardrail. */
const executedArgs = new WeakMap<object, Map<string, Record<string, unknown>>>();

/**
 * A tool output guardrail (the SDK's `outputGuardrails` of a tool, or `toolOutputGuardrails` of an MCP
 * server) that sends each result through Gatehouse's result guards (POST /inspect, stage `result`):
 * allowed as it is → `allow`; redacted → `rejectContent` with the redacted output as the content (the
 * SDK's one way for a guardrail to change an output: a string, JSON for any other value); denied, a
 * review an operator did not grant within `maxWaitMs`, or Gatehouse unreachable → `rejectContent` with
 * the message saying the output was withheld. The tool ran either way. `outputInfo` carries
 * `{gatehouse: decision, findings?, approval?}`.
 */
export function gatehouseOutputGuardrail<Context = unknown>(
  client: GatehouseClient,
  options: OutputGuardrailOptions<Context> = {},
): ToolOutputGuardrailDefinition<Context> {
  return defineToolOutputGuardrail<Context>({
    name: 'gatehouse',
    run: async ({ context, toolCall, output }) => {
      const tool = `${options.prefix ?? ''}${toolCall.name}`;
      const args = executedArgs.get(context)?.get(toolCall.callId) ?? parsedArguments(toolCall.arguments) ?? {};
      const call = pausedCall(tool, args, options, context);
      const verdict = await client.guardResult(
        { tool, args, result: output, ...(call.context !== undefined ? { context: call.context } : {}) },
        {
          ...(call.runId !== undefined ? { runId: call.runId } : {}),
          ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
          ...(options.maxRetryMs !== undefined ? { maxRetryMs: options.maxRetryMs } : {}),
          ...(options.maxWaitMs !== undefined ? { maxWaitMs: options.maxWaitMs } : {}),
          ...(options.onPending ? { onPending: options.onPending } : {}),
        },
      );
      const approval = verdict.approval ? { approval: verdict.approval } : {};
      if (verdict.decision !== 'allow') {
        const withheld = new GatehouseWithheldError(verdict.message, tool, verdict.decision, verdict.approval);
        return ToolGuardrailFunctionOutputFactory.rejectContent(withheld.message, {
          gatehouse: verdict.decision,
          ...approval,
        });
      }
      if (!verdict.redacted) return ToolGuardrailFunctionOutputFactory.allow({ gatehouse: 'allow', ...approval });
      const content = typeof verdict.output === 'string' ? verdict.output : JSON.stringify(verdict.output);
      return ToolGuardrailFunctionOutputFactory.rejectContent(content, {
        gatehouse: 'redacted',
        findings: verdict.findings,
        ...approval,
      });
    },
  });
}

/** The SDK's own default for a tool error without an errorFunction (its `defaultToolErrorFunction`). */
const SDK_DEFAULT_TOOL_ERROR = 'An error occurred while running the tool. Please try again.';

/**
 * The SDK's tool(), gated by Gatehouse: `needsApproval` is gatehouseNeedsApproval (leave yours out:
 * Gatehouse decides when a human is needed), and `execute` runs only when gate() allows the call,
 * right then. A refusal at execute is the model message as the tool's output (thrown as
 * GatehouseRefusalError for a tool with an `outputSchema`, which a string would not satisfy, for its
 * errorFunction to answer); an abort throws GatehouseAbortError past the errorFunction, and the run fails.
 */
export function gatedTool<
  TParameters extends ToolInputParameters = undefined,
  Context = unknown,
  Result = string,
  TOutputSchema extends ToolOutputSchema | undefined = undefined,
>(
  options: ToolOptions<TParameters, Context, TOutputSchema> & { name: string },
  client: GatehouseClient,
  gateOptions: GatedToolOptions<Context> = {},
): ReturnType<typeof tool<TParameters, Context, Result, TOutputSchema>> {
  if (options.needsApproval !== undefined)
    throw new TypeError(`gatedTool("${options.name}"): needsApproval is Gatehouse's to answer; leave it out`);
  const name = options.name;
  const original = options.execute as (
    input: unknown,
    runContext?: RunContext<Context>,
    details?: { signal?: AbortSignal },
  ) => unknown;
  const hasOutputSchema = options.outputSchema !== undefined;
  const execute = async (
    input: unknown,
    runContext?: RunContext<Context>,
    details?: { signal?: AbortSignal },
  ): Promise<unknown> => {
    const args = argsOf(input);
    if (args === undefined) return refuse(new GatehouseRefusalError(notAnObject(name), name, 'deny'));
    const call = pausedCall(name, args, gateOptions, runContext);
    const callId = (details as { toolCall?: { callId?: unknown } } | undefined)?.toolCall?.callId;
    if (gateOptions.guardResults && runContext !== undefined && typeof callId === 'string') {
      const calls = executedArgs.get(runContext) ?? new Map<string, Record<string, unknown>>();
      executedArgs.set(runContext, calls.set(callId, args));
    }
    const result = await client.gate(
      { tool: name, args, ...(call.context !== undefined ? { context: call.context } : {}) },
      {
        ...(call.runId !== undefined ? { runId: call.runId } : {}),
        ...stepOptions(gateOptions),
        ...(details?.signal ? { signal: details.signal } : {}),
        ...(gateOptions.maxWaitMs !== undefined ? { maxWaitMs: gateOptions.maxWaitMs } : {}),
        ...(gateOptions.onPending ? { onPending: gateOptions.onPending } : {}),
      },
    );
    if (result.decision === 'allow') {
      const amended = result.amended;
      if (amended === undefined) return await original(input, runContext, details);
      if (gateOptions.guardResults && runContext !== undefined && typeof callId === 'string')
        executedArgs.get(runContext)?.set(callId, amended.args);
      const output = await original(amended.args, runContext, details);
      // The SDK gives the model a string output as it is and any other as JSON: either way, after the note.
      if (hasOutputSchema) return output;
      const note = amendedNote(name, amended);
      return `${note}\n${typeof output === 'string' ? output : JSON.stringify(output)}`;
    }
    if (result.decision === 'abort') throw new GatehouseAbortError(result.message, name);
    return refuse(new GatehouseRefusalError(result.message, name, result.decision));
  };
  const refuse = (refusal: GatehouseRefusalError): string => {
    if (hasOutputSchema) throw refusal;
    return refusal.message;
  };
  // The SDK hands a thrown error to errorFunction and shows its answer to the model; an abort must
  // end the run instead, and the SDK propagates what errorFunction throws.
  const userErrorFunction = options.errorFunction;
  const errorFunction =
    userErrorFunction === null || (userErrorFunction === undefined && hasOutputSchema)
      ? null
      : async (runContext: RunContext<Context>, error: unknown, details?: unknown): Promise<unknown> => {
          if (error instanceof GatehouseAbortError) throw error;
          return userErrorFunction
            ? await (userErrorFunction as (c: RunContext<Context>, e: unknown, d?: unknown) => unknown)(
                runContext,
                error,
                details,
              )
            : SDK_DEFAULT_TOOL_ERROR;
        };
  const { guardResults, ...toolGateOptions } = gateOptions;
  const outputGuardrails = guardResults
    ? [...resolvedGuardrails(options.outputGuardrails), gatehouseOutputGuardrail<Context>(client, toolGateOptions)]
    : options.outputGuardrails;
  return tool<TParameters, Context, Result, TOutputSchema>({
    ...options,
    ...(outputGuardrails !== undefined ? { outputGuardrails } : {}),
    execute,
    errorFunction,
    needsApproval: gatehouseNeedsApproval<Context>(client, { tool: name, ...toolGateOptions }),
  } as ToolOptions<TParameters, Context, TOutputSchema>);
}

/** `timeoutMs` here is each request's, over the tools' own. */
export interface SettleOptions extends RequestOptions {
  /** How long to wait for operators, in all; default 600,000 (10 minutes); 0 looks once. */
  maxWaitMs?: number;
  /** Stops waiting; the approvals stay pending in Gatehouse for a later call to resume. */
  signal?: AbortSignal;
  onPending?: (approval: ApprovalRef & { message: string; callId: string }) => void;
}

/** What settleInterruptions did with one interruption. */
export interface Settled {
  item: RunToolApprovalItem;
  tool: string;
  /** approved / rejected: done in the run state; pending: left as it is; skipped: not a gated tool's, left to you. */
  outcome: 'approved' | 'rejected' | 'pending' | 'skipped';
  /** The model message: the rejection's text, or why it waits. */
  message?: string;
  approval?: ApprovalRef;
}

/**
 * Settle a run's interruptions in Gatehouse: for each interruption of a gated tool, wait for the
 * operator; granted (or allowed by policy meanwhile) → `state.approve`; denied by policy or operator,
 * expired or withdrawn → `state.reject` with the model message; unanswered within `maxWaitMs` →
 * left pending. Resume with run(agent, result.state) when nothing is pending (`pending` is false).
 * An abort throws GatehouseAbortError, approving nothing: do not resume, the run is over.
 * `run` is the run's result, or its RunState (as read back with RunState.fromString after a restart).
 */
export async function settleInterruptions(
  // biome-ignore lint/suspicious/noExplicitAny: a run of any context and agent, as the SDK types them (its generics do not widen)
  run: RunResult<any, any> | StreamedRunResult<any, any> | RunState<any, any>,
  client: GatehouseClient,
  options: SettleOptions = {},
): Promise<{ settled: Settled[]; pending: boolean }> {
  const result = run instanceof RunState ? new RunResult(run) : run;
  const deadline = Date.now() + (options.maxWaitMs ?? 600_000);
  const settled: Settled[] = [];
  for (const item of result.interruptions) {
    const name = item.name ?? '';
    const marked = gatehouseToolOf(item);
    const callId = item.rawItem.type === 'function_call' ? item.rawItem.callId : undefined;
    if (marked === undefined || callId === undefined) {
      settled.push({ item, tool: name, outcome: 'skipped' });
      continue;
    }
    const asked = askedCalls.get(result.runContext)?.get(callId);
    if (asked?.expired !== undefined) {
      result.state.reject(item, { message: asked.expired.message });
      settled.push({
        item,
        tool: name,
        outcome: 'rejected',
        message: asked.expired.message,
        approval: asked.expired.approval,
      });
      continue;
    }
    const args = asked?.args ?? parsedArguments(item.arguments);
    if (args === undefined) {
      result.state.reject(item, { message: notAnObject(name) });
      settled.push({ item, tool: name, outcome: 'rejected', message: notAnObject(name) });
      continue;
    }
    const answer = await awaitOperator(client, marked.callOf(args, result.runContext), {
      ...marked.step,
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      maxWaitMs: Math.max(0, deadline - Date.now()),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onPending ? { onPending: (a) => options.onPending?.({ ...a, callId }) } : {}),
    });
    switch (answer.kind) {
      case 'run':
        result.state.approve(item);
        settled.push({
          item,
          tool: name,
          outcome: 'approved',
          ...(answer.approval ? { approval: answer.approval } : {}),
        });
        break;
      case 'refuse':
        result.state.reject(item, { message: answer.message });
        settled.push({
          item,
          tool: name,
          outcome: 'rejected',
          message: answer.message,
          ...(answer.approval ? { approval: answer.approval } : {}),
        });
        break;
      case 'abort':
        throw new GatehouseAbortError(answer.message, name);
      case 'pending':
        settled.push({ item, tool: name, outcome: 'pending', message: answer.message, approval: answer.approval });
        break;
    }
  }
  return { settled, pending: settled.some((s) => s.outcome === 'pending') };
}

/** A tool's own output guardrails, as definitions (the SDK takes `{name, run}` too). */
function resolvedGuardrails<Context>(
  given: ToolOptions<ToolInputParameters, Context, undefined>['outputGuardrails'] | undefined,
): ToolOutputGuardrailDefinition<Context>[] {
  return (given ?? []).map((g) => defineToolOutputGuardrail<Context>({ name: g.name, run: g.run }));
}

/** The Gatehouse marking of the interrupted tool (a function tool of the item's agent whose needsApproval is ours). */
function gatehouseToolOf(item: RunToolApprovalItem): Marking | undefined {
  const tools = (item.agent as { tools?: readonly unknown[] }).tools ?? [];
  for (const t of tools) {
    const f = t as Partial<FunctionTool> & { type?: string };
    if (f.type === 'function' && f.name === item.name) return (f.needsApproval as Marked | undefined)?.[GATEHOUSE];
  }
  return undefined;
}

function pausedCall<Context>(
  tool: string,
  args: Record<string, unknown>,
  options: AgentsGateOptions<Context>,
  runContext: RunContext<Context> | undefined,
): PausedCall {
  const runId =
    typeof options.runId === 'function' ? (runContext ? options.runId(runContext) : undefined) : options.runId;
  return {
    tool,
    args,
    ...(options.context !== undefined ? { context: options.context } : {}),
    ...(runId !== undefined ? { runId } : {}),
  };
}

/**
 * The model's arguments of an interruption, as JSON: what a restarted process has, when the run
 * context that saw the parsed arguments is gone. For a schema that changes them when parsing
 * (defaults, transforms), the approval is then not found, and the tool's gate() waits for it instead.
 */
function parsedArguments(text: string | undefined): Record<string, unknown> | undefined {
  try {
    return argsOf(text === undefined || text === '' ? {} : JSON.parse(text));
  } catch {
    return undefined;
  }
}

/** Gatehouse judges a call's arguments as a JSON object (spec section 5.3 `args`); a tool input that is not one is refused. */
function argsOf(input: unknown): Record<string, unknown> | undefined {
  if (input === undefined || input === null) return {};
  return typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : undefined;
}

function notAnObject(tool: string): string {
  return `The "${tool}" action was not run: its input is not a JSON object, which Gatehouse needs to check it against policy. Tell the user.`;
}
