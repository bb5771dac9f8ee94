// `gatehouse-pdp/ai-sdk`: Gatehouse as the Vercel AI SDK's (`ai` 7) tool approval and tool gate
// (docs/ai-sdk.md). Three parts, used together:
//   gatehouseToolApproval: the `toolApproval` option of generateText / streamText / ToolLoopAgent.
//     allow → not-applicable; deny → denied with the model message; abort → throws
//     GatehouseAbortError (the call rejects); require_approval → files the approval in Gatehouse and
//     answers 'user-approval', which stops the run with a tool-approval-request.
//   settleApprovalRequests: waits in Gatehouse for the operator's answers to those requests and gives
//     the tool-approval-response parts to resume the run with.
//   gateTools: wraps each tool's execute with gate(), which redeems the grant (or decides, for a call
//     that needed none) right before the tool runs: the enforcement point. A grant an operator amended
//     (docs/spec.md section 5.4) runs the tool with the amended input, and its output tells the model
//     what changed (withAmendedNote). The approval step alone is
//     not one: a host can answer approval requests itself, and only execute's gate() consumes a grant.
// Only types are imported from `ai`: at run time this module needs nothing but the client.
import type { ModelMessage, ToolApprovalResponse, ToolApprovalStatus, ToolExecutionOptions, ToolSet } from 'ai';
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
import { type Amended, amendedNote } from './amended.js';
import type { RequestOptions } from './types.js';

export { GatehouseAbortError, GatehouseRefusalError, GatehouseWithheldError } from './approval-pause.js';

/**
 * `maxRetryMs`: how long each part retries a 503 per its Retry-After (default 30 s, so the approval
 * step survives a brief outage; beyond it the call is denied). `onExpired`: an approval that expired is
 * reported to the model (default `report`) or replaced by a new one (`refile`).
 */
export interface AiSdkGateOptions extends StepOptions {
  /** The run the calls belong to: sent as `run.id`, and the scope of "one approval per call". Use the same for all three parts. */
  runId?: string;
  /** Facts the host sets about where the calls run (spec section 5.3 `context`), the same for all three parts. */
  context?: Record<string, unknown>;
}

/** The part of a tool call the approval function reads (the SDK's TypedToolCall has these). */
interface ApprovalToolCall {
  toolName: string;
  toolCallId: string;
  input: unknown;
}

/**
 * A `toolApproval` function backed by Gatehouse. It governs every tool call of the run (a function
 * `toolApproval` takes precedence over the tools' own `needsApproval`). Gatehouse unreachable: denied.
 */
export function gatehouseToolApproval(
  client: GatehouseClient,
  options: AiSdkGateOptions = {},
): (input: { toolCall: ApprovalToolCall; messages: ModelMessage[] }) => Promise<ToolApprovalStatus> {
  return async ({ toolCall, messages }) => {
    const args = argsOf(toolCall.input);
    if (args === undefined) return { type: 'denied', reason: notAnObject(toolCall.toolName) };
    const call = pausedCall(toolCall.toolName, args, options);
    // The SDK asks again when the run resumes with an approved response (it re-validates before it
    // executes). Filing then would be wrong, and so would redeeming: the tool's gate() redeems the
    // grant. What Gatehouse says now still stands when it refuses (an operator's denial, a policy that
    // changed); a host that approved what Gatehouse has not leaves the tool's gate() to wait.
    if (answeredApproval(messages, toolCall.toolCallId)) {
      const now = await awaitOperator(client, call, { ...stepOptions(options), maxWaitMs: 0 });
      if (now.kind === 'abort') throw new GatehouseAbortError(now.message, toolCall.toolName);
      return now.kind === 'refuse' ? { type: 'denied', reason: now.message } : undefined;
    }
    const ask = await askGatehouse(client, call, stepOptions(options));
    switch (ask.kind) {
      case 'run':
        return undefined;
      case 'refuse':
        return { type: 'denied', reason: ask.message };
      case 'abort':
        throw new GatehouseAbortError(ask.message, toolCall.toolName);
      case 'operator':
        return { type: 'user-approval', reason: ask.message };
    }
  };
}

export interface SettleOptions extends AiSdkGateOptions, RequestOptions {
  /** How long to wait for operators, in all; default 600,000 (10 minutes); 0 looks once. */
  maxWaitMs?: number;
  /** Stops waiting; the approvals stay pending in Gatehouse for a later call to resume. */
  signal?: AbortSignal;
  onPending?: (approval: ApprovalRef & { message: string; toolCallId: string }) => void;
}

/** A request still waiting for an operator: resume the run only when none is left. */
export interface PendingRequest {
  approvalId: string;
  toolCallId: string;
  toolName: string;
  message: string;
  approval: ApprovalRef;
}

/** A tool-approval-request as it appears in a result's `content` (the SDK's ToolApprovalRequestOutput). */
interface ApprovalRequestPart {
  type: 'tool-approval-request';
  approvalId: string;
  toolCall: ApprovalToolCall;
  isAutomatic?: boolean;
}

/**
 * Answer the run's tool-approval-requests from Gatehouse: for each (not automatic), wait for the
 * operator; granted (or allowed by policy meanwhile) → approved; denied, expired or withdrawn →
 * not approved, with the model message as the reason. Add the responses as a `tool` message and call
 * the model again when `pending` is empty. An `abort` throws GatehouseAbortError: do not resume.
 * `result` is a generateText result, or `{ content: await streamResult.content }`.
 */
export async function settleApprovalRequests(
  result: { content: readonly { type: string }[] },
  client: GatehouseClient,
  options: SettleOptions = {},
): Promise<{ responses: ToolApprovalResponse[]; pending: PendingRequest[] }> {
  const deadline = Date.now() + (options.maxWaitMs ?? 600_000);
  const responses: ToolApprovalResponse[] = [];
  const pending: PendingRequest[] = [];
  const requests = result.content.filter(
    (p): p is ApprovalRequestPart => p.type === 'tool-approval-request' && !(p as ApprovalRequestPart).isAutomatic,
  );
  for (const request of requests) {
    const { toolName, toolCallId } = request.toolCall;
    const args = argsOf(request.toolCall.input);
    if (args === undefined) {
      responses.push({
        type: 'tool-approval-response',
        approvalId: request.approvalId,
        approved: false,
        reason: notAnObject(toolName),
      });
      continue;
    }
    const answer = await awaitOperator(client, pausedCall(toolName, args, options), {
      ...stepOptions(options),
      maxWaitMs: Math.max(0, deadline - Date.now()),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onPending ? { onPending: (a) => options.onPending?.({ ...a, toolCallId }) } : {}),
    });
    switch (answer.kind) {
      case 'run':
        responses.push({ type: 'tool-approval-response', approvalId: request.approvalId, approved: true });
        break;
      case 'refuse':
        responses.push({
          type: 'tool-approval-response',
          approvalId: request.approvalId,
          approved: false,
          reason: answer.message,
        });
        break;
      case 'abort':
        throw new GatehouseAbortError(answer.message, toolName);
      case 'pending':
        pending.push({
          approvalId: request.approvalId,
          toolCallId,
          toolName,
          message: answer.message,
          approval: answer.approval,
        });
        break;
    }
  }
  return { responses, pending };
}

export interface GateToolsOptions extends AiSdkGateOptions {
  /** How long execute waits for an operator when the call still needs one; default the client's (10 minutes). */
  maxWaitMs?: number;
  onPending?: (approval: PendingApproval) => void;
  /**
   * The run's controller, whose `signal` is generateText's `abortSignal`. An `abort` aborts it with the
   * GatehouseAbortError, so the run ends: the SDK turns any error thrown by execute into a tool result
   * for the model, but checks this signal before each further step, and rejects with the error.
   */
  abortController?: AbortController;
  /**
   * Send each tool's result through Gatehouse's result guards (POST /inspect) before the model sees
   * it: allowed → returned as it is, or redacted; withheld (denied, a review not granted within
   * `maxWaitMs`, Gatehouse unreachable) → throws GatehouseWithheldError, whose message the model
   * reads as the tool's error. A streaming tool's preliminary results are then held back: only its
   * last, guarded, is yielded.
   */
  guardResults?: boolean;
}

/**
 * The tools, each `execute` preceded by gate(): allow → the tool runs; deny, or an approval not
 * granted within `maxWaitMs` → it does not, and throws GatehouseRefusalError, whose message the SDK
 * gives the model as the tool's error; abort → GatehouseAbortError, and the run ends (abortController).
 * Tools without `execute` (run by the client or the provider) are left as they are.
 */
export function gateTools<TOOLS extends ToolSet>(
  tools: TOOLS,
  client: GatehouseClient,
  options: GateToolsOptions = {},
): TOOLS {
  const gated: Record<string, unknown> = {};
  for (const [name, tool] of Object.entries(tools)) {
    const execute = (tool as { execute?: unknown }).execute;
    gated[name] =
      typeof execute === 'function'
        ? { ...tool, execute: gatedExecute(name, execute as Execute, client, options) }
        : tool;
  }
  return gated as TOOLS;
}

// The SDK calls execute with the parsed input and its options; the wrapper is as generic as that.
type Execute = (input: unknown, options: ToolExecutionOptions<unknown>) => unknown;

function gatedExecute(name: string, execute: Execute, client: GatehouseClient, options: GateToolsOptions): Execute {
  /** The input the tool runs with: the model's, or the operator's amendment of it. */
  const check = async (input: unknown, o: ToolExecutionOptions<unknown>): Promise<Amended | undefined> => {
    const args = argsOf(input);
    if (args === undefined) throw new GatehouseRefusalError(notAnObject(name), name, 'deny');
    const result = await client.gate(
      { tool: name, args, ...(options.context !== undefined ? { context: options.context } : {}) },
      {
        ...(options.runId !== undefined ? { runId: options.runId } : {}),
        ...stepOptions(options),
        ...(o.abortSignal ? { signal: o.abortSignal } : {}),
        ...(options.maxWaitMs !== undefined ? { maxWaitMs: options.maxWaitMs } : {}),
        ...(options.onPending ? { onPending: options.onPending } : {}),
      },
    );
    if (result.decision === 'allow') return result.amended;
    if (result.decision === 'abort') {
      const error = new GatehouseAbortError(result.message, name);
      options.abortController?.abort(error);
      throw error;
    }
    throw new GatehouseRefusalError(result.message, name, result.decision);
  };
  // What the model may see of the result: as it is, redacted, or nothing (the tool ran all the same).
  const guard = async (input: unknown, output: unknown, o: ToolExecutionOptions<unknown>): Promise<unknown> => {
    const verdict = await client.guardResult(
      {
        tool: name,
        args: argsOf(input) ?? {},
        result: output,
        ...(options.context !== undefined ? { context: options.context } : {}),
      },
      {
        ...(options.runId !== undefined ? { runId: options.runId } : {}),
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        ...(options.maxRetryMs !== undefined ? { maxRetryMs: options.maxRetryMs } : {}),
        ...(o.abortSignal ? { signal: o.abortSignal } : {}),
        ...(options.maxWaitMs !== undefined ? { maxWaitMs: options.maxWaitMs } : {}),
        ...(options.onPending ? { onPending: options.onPending } : {}),
      },
    );
    if (verdict.decision === 'allow') return verdict.output;
    throw new GatehouseWithheldError(verdict.message, name, verdict.decision, verdict.approval);
  };
  // A streaming tool (an async generator) stays one, so its preliminary results still stream (when
  // results are guarded, only the last, once guarded: a preliminary one would reach the UI unchecked);
  // any other stays a function whose promise is the result.
  if (Object.prototype.toString.call(execute) === '[object AsyncGeneratorFunction]') {
    return async function* (asked: unknown, o: ToolExecutionOptions<unknown>) {
      const amended = await check(asked, o);
      const input = amended?.args ?? asked;
      if (!options.guardResults && amended === undefined) {
        yield* execute(input, o) as AsyncIterable<unknown>;
        return;
      }
      // Amended: only the last part, with the note (a preliminary part would reach the UI without it).
      let last: unknown = null;
      for await (const part of execute(input, o) as AsyncIterable<unknown>) last = part;
      const output = options.guardResults ? await guard(input, last, o) : last;
      yield amended === undefined ? output : withAmendedNote(name, amended, output);
    };
  }
  return async (asked: unknown, o: ToolExecutionOptions<unknown>) => {
    const amended = await check(asked, o);
    const input = amended?.args ?? asked;
    const raw = await execute(input, o);
    const output = options.guardResults ? await guard(input, raw, o) : raw;
    return amended === undefined ? output : withAmendedNote(name, amended, output);
  };
}

/**
 * The output of a call an operator amended, telling the model so: a text output opens with the note
 * line; any other becomes `{amended: NOTE, output}` (docs/ai-sdk.md, "Amended calls").
 */
export function withAmendedNote(tool: string, amended: Amended, output: unknown): unknown {
  const note = amendedNote(tool, amended);
  return typeof output === 'string' ? `${note}\n${output}` : { amended: note, output };
}

function pausedCall(tool: string, args: Record<string, unknown>, options: AiSdkGateOptions): PausedCall {
  return {
    tool,
    args,
    ...(options.context !== undefined ? { context: options.context } : {}),
    ...(options.runId !== undefined ? { runId: options.runId } : {}),
  };
}

/** Gatehouse judges a call's arguments as a JSON object (spec section 5.3 `args`); a tool input that is not one is refused. */
function argsOf(input: unknown): Record<string, unknown> | undefined {
  if (input === undefined || input === null) return {};
  return typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : undefined;
}

function notAnObject(tool: string): string {
  return `The "${tool}" action was not run: its input is not a JSON object, which Gatehouse needs to check it against policy. Tell the user.`;
}

/** The run resumes with a response to an approval request of this tool call (in the last, `tool`, message). */
function answeredApproval(messages: readonly ModelMessage[], toolCallId: string): boolean {
  const last = messages.at(-1);
  if (last?.role !== 'tool') return false;
  const answered = new Set(last.content.flatMap((p) => (p.type === 'tool-approval-response' ? [p.approvalId] : [])));
  return messages.some(
    (m) =>
      m.role === 'assistant' &&
      typeof m.content !== 'string' &&
      m.content.some(
        (p) => p.type === 'tool-approval-request' && p.toolCallId === toolCallId && answered.has(p.approvalId),
      ),
  );
}
