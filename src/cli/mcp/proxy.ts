// The MCP server `gatehouse mcp-proxy` serves: the upstream server's tools, resources, prompts and
// completions relayed as the upstream wrote them, with every tools/call decided by Gatehouse first
// (docs/mcp.md says what the caller sees). Built on the SDK's low-level Server and Client so
// that schemas and results pass through untouched, not re-described.
//
// - tools/list: the upstream's page, minus the tools the inventory says never run (./visible.ts).
//   Gatehouse unreachable: an error, never the unfiltered list.
// - tools/call: gate() with the run id, the request's AbortSignal (a notifications/cancelled withdraws
//   the approval) and, while an approval is pending, notifications/progress every `progressEveryMs` to
//   a caller that sent a progress token (an SDK client with resetTimeoutOnProgress keeps waiting past
//   its 60 s request timeout). Allowed: forwarded, its result relayed; allowed as an operator amended
//   it (docs/spec.md section 5.4, "Amend and grant"): forwarded with the amended arguments, and the
//   result opens with a text line naming the changed argument paths. Anything else, Gatehouse
//   unreachable included: an isError result carrying the decision's message; the upstream never sees it.
// - The upstream's result: guardResult() (POST /inspect, stage `result`) before the caller sees it,
//   for every call, whether or not the policy has result guards for the tool (docs/mcp.md says why).
//   allow: relayed (redacted when a redact guard found something); deny, a review not granted within
//   the wait, Gatehouse unreachable: withheld, an isError result carrying the message. An upstream's
//   error answer likewise, as `{error: {code, message, data}}`: relayed, redacted, or its message replaced.
// - An abort ends the session (this server is one MCP session): every later tools/call in it is refused
//   with the abort's message, without asking Gatehouse or reaching the upstream, and the calls waiting
//   for an operator then are withdrawn. MCP gives a server no way to end the client's run; a session
//   that refuses every tool is the nearest it comes. A new session (the client reconnects) starts fresh.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { Server as McpServer } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  type CallToolResult,
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  type Progress,
  PromptListChangedNotificationSchema,
  ReadResourceRequestSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ResultSchema,
  type ServerCapabilities,
  type ServerResult,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  ToolListChangedNotificationSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { TOOL_NAME_PATTERN } from '../../policy/request.js';
import type { GatehouseClient, GateResult, GuardResult, PendingApproval } from '../../client/index.js';
import { amendedNote } from '../../client/amended.js';
import { checkInventory, visibleTools } from './visible.js';

export interface ProxyOptions {
  /** Connected to the upstream server. */
  upstream: Client;
  gatehouse: Pick<GatehouseClient, 'gate' | 'tools' | 'guardResult'>;
  /** Prepended to an upstream tool's name to name it to Gatehouse (`github.` → `github.create_issue`). */
  prefix: string;
  /** The run of every call (one per proxy process). */
  runId: string;
  /** How long a call may wait for an operator (gate()'s maxWaitMs). */
  maxWaitMs: number;
  /** Progress notifications while an approval is pending, this far apart. */
  progressEveryMs: number;
  /** Told once, when an abort ends the session. */
  onSessionEnd?: (abort: { tool: string; message: string }) => void;
}

const TOOL_NAME = new RegExp(TOOL_NAME_PATTERN);

// A forwarded tools/call may run as long as the tool takes: the caller, who set its own timeout, cancels
// it (notifications/cancelled, relayed upstream by the SDK). The longest delay setTimeout takes.
const FORWARD_TIMEOUT_MS = 2 ** 31 - 1;

export function createProxyServer(options: ProxyOptions): Server {
  const { upstream, gatehouse, prefix, runId } = options;
  const up = upstream.getServerCapabilities() ?? {};
  const capabilities: ServerCapabilities = { tools: up.tools?.listChanged ? { listChanged: true } : {} };
  if (up.resources)
    capabilities.resources = {
      ...(up.resources.subscribe ? { subscribe: true } : {}),
      ...(up.resources.listChanged ? { listChanged: true } : {}),
    };
  if (up.prompts) capabilities.prompts = up.prompts.listChanged ? { listChanged: true } : {};
  if (up.completions) capabilities.completions = {};
  if (up.logging) capabilities.logging = {};

  const info = upstream.getServerVersion() ?? { name: 'gatehouse-mcp-proxy', version: '0' };
  const instructions = upstream.getInstructions();
  const server = new McpServer(info, { capabilities, ...(instructions !== undefined ? { instructions } : {}) });

  // A request relayed as it came, with the caller's progress token removed (the SDK gives the upstream
  // request its own), and its result returned as the upstream wrote it (ResultSchema keeps every field).
  const relay = async (
    method: string,
    params: Record<string, unknown> | undefined,
    signal: AbortSignal,
  ): Promise<ServerResult> =>
    // ResultSchema is the loose base of every result: what comes back is the upstream's own result for this method.
    (await upstream
      .request({ method, params: withoutProgressToken(params) }, ResultSchema, { signal })
      .catch(relayed)) as ServerResult;

  server.setRequestHandler(ListToolsRequestSchema, async (request, extra) => {
    if (!up.tools) return { tools: [] };
    const [page, inventory] = await Promise.all([
      relay('tools/list', request.params, extra.signal),
      gatehouse.tools().then(
        (answer) => {
          checkInventory(answer);
          return answer;
        },
        (err: unknown) => {
          throw new RpcError(
            ErrorCode.InternalError,
            `Gatehouse could not say which tools may run (${messageOf(err)}); the tool list is not shown unfiltered`,
          );
        },
      ),
    ]);
    const tools = (page as { tools?: unknown }).tools;
    if (!Array.isArray(tools) || !tools.every((t) => typeof (t as { name?: unknown } | null)?.name === 'string')) {
      throw new RpcError(
        ErrorCode.InternalError,
        'the upstream server answered tools/list without a list of named tools',
      );
    }
    try {
      return { ...page, tools: visibleTools(tools as { name: string }[], inventory, prefix) } as ServerResult;
    } catch (err) {
      throw new RpcError(
        ErrorCode.InternalError,
        `the tool inventory could not be read (${messageOf(err)}); the tool list is not shown unfiltered`,
      );
    }
  });

  // The abort that ended this session, once there is one, and the gate()s in flight, for it to stop.
  // (One controller per call rather than a session-long signal in AbortSignal.any: each call's is let go.)
  let ended: { tool: string; text: string } | undefined;
  const inFlight = new Set<AbortController>();
  const endedRefusal = (tool: string): CallToolResult =>
    refusal(
      `The "${tool}" action was not run: this session ended when Gatehouse aborted an earlier call, and every later call in it is refused. ${ended!.text}`,
      {
        decision: 'abort',
      },
    );

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args } = request.params;
    const tool = `${prefix}${name}`;
    if (ended !== undefined) return endedRefusal(tool);
    if (!TOOL_NAME.test(tool))
      return refusal(
        `"${tool}" is not a tool name Gatehouse accepts (docs/spec.md section 5.1): the call was not run.`,
      );
    const progress = progressChannel(request.params._meta?.progressToken, (n) => extra.sendNotification(n));

    let pending: PendingApproval | undefined;
    const ticker = setInterval(() => {
      if (pending !== undefined) progress.send(`still waiting for an operator's approval (${pending.id})`);
    }, options.progressEveryMs);
    const stop = new AbortController();
    inFlight.add(stop);
    let result: GateResult;
    try {
      result = await gatehouse.gate(
        { tool, args: args ?? {} },
        {
          runId,
          // The caller's cancel, or the session's end: either withdraws the approval this call waits on.
          signal: AbortSignal.any([extra.signal, stop.signal]),
          maxWaitMs: options.maxWaitMs,
          onPending: (p) => {
            if (pending === undefined) progress.send(`waiting for an operator's approval (${p.id}): ${p.url}`);
            pending = p;
          },
        },
      );
    } catch (err) {
      // gate() answers every decision and failure itself; a throw is a bug, and a bug never runs the tool.
      return refusal(`Gatehouse could not decide this call (${messageOf(err)}): it was not run.`);
    } finally {
      inFlight.delete(stop);
      clearInterval(ticker);
    }
    // Another call's abort ended the session while this one was being decided: whatever came of it, it does not run.
    if (ended !== undefined) return endedRefusal(tool);
    if (result.decision === 'abort') {
      const text = refusalText(result);
      ended = { tool, text };
      for (const other of inFlight) other.abort();
      options.onSessionEnd?.({ tool, message: result.message });
      return refusal(text, result);
    }
    if (result.decision !== 'allow') return refusal(refusalText(result), result);
    // What runs: the call as asked, or as the operator amended it.
    const amended = result.amended;
    const runArgs = amended?.args ?? args ?? {};
    const params = withoutProgressToken(request.params);

    let output: CallToolResult;
    try {
      output = (await upstream.request(
        { method: 'tools/call', params: amended === undefined ? params : { ...params, arguments: amended.args } },
        CallToolResultSchema,
        {
          signal: extra.signal,
          timeout: FORWARD_TIMEOUT_MS,
          resetTimeoutOnProgress: true,
          ...(progress.enabled ? { onprogress: (p: Progress) => progress.relay(p) } : {}),
        },
      )) as CallToolResult;
    } catch (err) {
      // The upstream's error answer: its text can carry what a result would, so it is guarded too.
      if (!(err instanceof McpError) || extra.signal.aborted) relayed(err);
      return guardedError(tool, runArgs, err, extra.signal, progress);
    }
    const shown = await guarded(tool, runArgs, output, extra.signal, progress);
    if (amended === undefined) return shown;
    // The model is told the call ran with other arguments than it chose, and which (its output withheld or not).
    return { ...shown, content: [{ type: 'text', text: amendedNote(tool, amended) }, ...shown.content] };
  });

  /**
   * The upstream's error answer as the caller may see it: relayed as it came, with its message and
   * data redacted, or with a message saying it was withheld (the same code).
   */
  const guardedError = async (
    tool: string,
    args: Record<string, unknown>,
    err: McpError,
    signal: AbortSignal,
    progress: ReturnType<typeof progressChannel>,
  ): Promise<never> => {
    const message = err.message.replace(/^MCP error -?\d+: /, '');
    const error = { code: err.code, message, ...(err.data !== undefined ? { data: err.data } : {}) };
    const verdict = await verdictOf(tool, args, { error }, signal, progress);
    if (verdict.decision !== 'allow')
      throw new RpcError(err.code, withheldText(verdict), { 'gatehouse/withheld': true });
    if (!verdict.redacted) relayed(err);
    const redacted = (verdict.output as { error?: { message?: unknown; data?: unknown } } | null)?.error;
    if (typeof redacted?.message !== 'string')
      throw new RpcError(err.code, `Gatehouse redacted the error of "${tool}" into something else: it was withheld.`);
    throw new RpcError(err.code, redacted.message, redacted.data);
  };

  /** The upstream's result as the caller may see it: relayed, redacted, or withheld. */
  const guarded = async (
    tool: string,
    args: Record<string, unknown>,
    output: CallToolResult,
    signal: AbortSignal,
    progress: ReturnType<typeof progressChannel>,
  ): Promise<CallToolResult> => {
    const verdict = await verdictOf(tool, args, output, signal, progress);
    // The call ran: `gatehouse/withheld` tells a host that it is the output that was withheld.
    if (verdict.decision !== 'allow') return withheld(refusal(withheldText(verdict), verdict));
    if (!verdict.redacted) return output;
    const redacted = verdict.output as CallToolResult;
    // A redaction keeps the result's shape (only text inside strings changes), so it is still a tool result.
    if (redacted === null || typeof redacted !== 'object' || !Array.isArray(redacted.content))
      return withheld(
        refusal(
          `Gatehouse redacted the output of "${tool}" into something that is not a tool result: it was withheld.`,
        ),
      );
    const meta = { ...(redacted._meta ?? {}), 'gatehouse/findings': verdict.findings };
    return { ...redacted, _meta: meta };
  };

  /** guardResult() with the wait's progress notifications; never throws (a throw is a bug: withheld). */
  const verdictOf = async (
    tool: string,
    args: Record<string, unknown>,
    result: unknown,
    signal: AbortSignal,
    progress: ReturnType<typeof progressChannel>,
  ): Promise<GuardResult> => {
    let pending: PendingApproval | undefined;
    const ticker = setInterval(() => {
      if (pending !== undefined) progress.send(`still waiting for an operator's review of the result (${pending.id})`);
    }, options.progressEveryMs);
    try {
      return await gatehouse.guardResult(
        { tool, args, result },
        {
          runId,
          signal,
          maxWaitMs: options.maxWaitMs,
          onPending: (p) => {
            if (pending === undefined)
              progress.send(`waiting for an operator's review of the result (${p.id}): ${p.url}`);
            pending = p;
          },
        },
      );
    } catch (err) {
      // guardResult() answers every failure itself; a throw is a bug, and a bug never shows the result.
      const message = `The output of "${tool}" was withheld: Gatehouse could not check it (${messageOf(err)}).`;
      return { decision: 'deny', message, reason: message };
    } finally {
      clearInterval(ticker);
    }
  };

  if (up.resources) {
    server.setRequestHandler(ListResourcesRequestSchema, (r, extra) => relay(r.method, r.params, extra.signal));
    server.setRequestHandler(ListResourceTemplatesRequestSchema, (r, extra) => relay(r.method, r.params, extra.signal));
    server.setRequestHandler(ReadResourceRequestSchema, (r, extra) => relay(r.method, r.params, extra.signal));
    if (up.resources.subscribe) {
      server.setRequestHandler(SubscribeRequestSchema, (r, extra) => relay(r.method, r.params, extra.signal));
      server.setRequestHandler(UnsubscribeRequestSchema, (r, extra) => relay(r.method, r.params, extra.signal));
    }
    upstream.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => server.notification(n));
    upstream.setNotificationHandler(ResourceListChangedNotificationSchema, (n) => server.notification(n));
  }
  if (up.prompts) {
    server.setRequestHandler(ListPromptsRequestSchema, (r, extra) => relay(r.method, r.params, extra.signal));
    server.setRequestHandler(GetPromptRequestSchema, (r, extra) => relay(r.method, r.params, extra.signal));
    upstream.setNotificationHandler(PromptListChangedNotificationSchema, (n) => server.notification(n));
  }
  if (up.completions)
    server.setRequestHandler(CompleteRequestSchema, (r, extra) => relay(r.method, r.params, extra.signal));
  if (up.logging) {
    server.setRequestHandler(SetLevelRequestSchema, (r, extra) => relay(r.method, r.params, extra.signal));
    upstream.setNotificationHandler(LoggingMessageNotificationSchema, (n) => server.notification(n));
  }
  if (up.tools?.listChanged)
    upstream.setNotificationHandler(ToolListChangedNotificationSchema, (n) => server.notification(n));
  return server;
}

/** The text the model reads for a call that was not run. */
export function refusalText(result: GateResult): string {
  const approval = result.approval;
  const parts = [result.message || `Gatehouse answered ${result.decision}: the call was not run.`];
  if (result.decision === 'require_approval' && approval !== undefined && !parts[0]!.includes(approval.id)) {
    parts.push(`(approval ${approval.id}: ${approval.status})`);
  }
  // MCP has no way for a server to end the client's run: the text says so to the model.
  if (result.decision === 'abort')
    parts.push('Gatehouse answered abort: this run must end now; make no further tool calls in it.');
  return parts.join(' ');
}

/** The text the model reads for a result that was withheld. */
export function withheldText(result: Exclude<GuardResult, { decision: 'allow' }>): string {
  const approval = result.approval;
  const parts = [result.message || `Gatehouse answered ${result.decision}: the output was withheld.`];
  if (result.decision === 'require_approval' && approval !== undefined && !parts[0]!.includes(approval.id)) {
    parts.push(`(review ${approval.id}: ${approval.status})`);
  }
  return parts.join(' ');
}

function refusal(text: string, result?: Pick<GateResult | GuardResult, 'decision' | 'approval'>): CallToolResult {
  const meta: Record<string, unknown> = { 'gatehouse/decision': result?.decision ?? 'deny' };
  if (result?.approval !== undefined)
    meta['gatehouse/approval'] = { id: result.approval.id, status: result.approval.status };
  return { content: [{ type: 'text', text }], isError: true, _meta: meta };
}

function withheld(result: CallToolResult): CallToolResult {
  return { ...result, _meta: { ...result._meta, 'gatehouse/withheld': true } };
}

interface ProgressNotification {
  method: 'notifications/progress';
  params: { progressToken: string | number; progress: number; total?: number; message?: string };
}

/**
 * Progress to the caller's token, when it gave one: the proxy's own notifications while an approval is
 * pending (0, 1, 2 …), then the upstream tool's, shifted past them, so that `progress` only grows
 * (MCP: it MUST increase with each notification).
 */
function progressChannel(token: string | number | undefined, send: (n: ProgressNotification) => Promise<void>) {
  let sent = 0;
  const emit = (progress: number, message: string | undefined, total?: number): void => {
    if (token === undefined) return;
    const params: ProgressNotification['params'] = { progressToken: token, progress };
    if (total !== undefined) params.total = total;
    if (message !== undefined) params.message = message;
    // A notification the transport cannot send (the caller went away) changes nothing about the call.
    send({ method: 'notifications/progress', params }).catch(() => undefined);
  };
  return {
    enabled: token !== undefined,
    send(message: string): void {
      emit(sent++, message);
    },
    relay(p: Progress): void {
      emit(sent + p.progress, p.message, p.total === undefined ? undefined : sent + p.total);
    },
  };
}

/** Request params without `_meta.progressToken` (the caller's token means nothing upstream). */
function withoutProgressToken<P extends Record<string, unknown>>(params: P | undefined): P | undefined {
  const meta = params?._meta as Record<string, unknown> | undefined;
  if (params === undefined || meta === undefined || !Object.hasOwn(meta, 'progressToken')) return params;
  const { progressToken: _dropped, ...rest } = meta;
  const { _meta: _old, ...others } = params;
  return (Object.keys(rest).length > 0 ? { ...others, _meta: rest } : others) as P;
}

/**
 * An error answer as the SDK sends it: `code`, `message` and `data` as they are. (An McpError writes
 * its code into its message, so relaying one as it is would repeat "MCP error -32603:" at every hop.)
 */
class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** The upstream's error answer, relayed with its own code, message and data. */
function relayed(err: unknown): never {
  if (err instanceof McpError) throw new RpcError(err.code, err.message.replace(/^MCP error -?\d+: /, ''), err.data);
  throw err;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
