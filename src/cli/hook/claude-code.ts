// Claude Code's PreToolUse and PostToolUse hooks, as `gatehouse hook claude-code` speaks them: the hook
// input Claude Code writes on stdin becomes a Gatehouse call (PreToolUse) or a tool's result
// (PostToolUse), and a gate() or guardResult() answer becomes the hook output it reads on stdout
// (https://code.claude.com/docs/en/hooks, "PreToolUse decision control" and "PostToolUse decision control").
//
// - The tool is Claude Code's tool name as sent (`Bash`, `Write`, `mcp__github__create_issue`), the
//   arguments its `tool_input`, the run its `session_id`.
// - The context (`$context.` in policies) is `cwd` and `project_dir`: CLAUDE_PROJECT_DIR when set, else
//   `cwd`; both absolute, normalised, with a trailing `/`, so that `path(file_path) startswith
//   $context.project_dir` is a sound prefix test (`/repo/` is not a prefix of `/repository/x`).
// - allow → "allow"; allowed as an operator amended it (docs/spec.md section 5.4, "Amend and grant") →
//   "allow" with `updatedInput`, the amended arguments Claude Code runs instead, and the changed
//   argument paths in the reason and in `additionalContext`, which the model reads; deny → "deny" with the message; abort → "deny", and `continue: false` so that
//   Claude Code stops (the run ends, as abort asks); require_approval still unanswered → "deny" naming
//   the approval (retry the same call once it is granted) or, with --on-pending ask, "ask".
// - PostToolUse: the tool already ran. allow → no output; withheld (deny, a review not granted, Gatehouse
//   unreachable) → `decision: "block"` with the message as `reason`, and the output replaced by the
//   message; redacted → the output replaced by the redacted one, with context (MCP tool) or a `block`
//   naming what was found (built-in tool, whose replacement Claude Code may not honour).
import { posix } from 'node:path';
import { amendedNote } from '../../client/amended.js';
import type { GateResult, GuardResult, ToolCall, ToolResult } from '../../client/index.js';

export type OnPending = 'ask' | 'deny';

/** What the hook reads of Claude Code's input (other fields, such as transcript_path, are not used). */
export interface HookInput {
  event: 'PreToolUse' | 'PostToolUse';
  sessionId: string;
  cwd: string;
  toolName: string;
  toolInput: Record<string, unknown>;
  /** PostToolUse: what the tool returned, as Claude Code sends it. */
  toolResponse?: unknown;
}

/** The output of a PostToolUse hook that acts on the result (none when it is handed on as it is). */
export interface PostHookOutput {
  decision?: 'block';
  reason?: string;
  hookSpecificOutput: {
    hookEventName: 'PostToolUse';
    additionalContext?: string;
    /** Replaces the output the model sees (Claude Code 2.1.121 and later, every tool). */
    updatedToolOutput?: unknown;
    /** The same, under its earlier, MCP-only name (older Claude Code). */
    updatedMCPToolOutput?: unknown;
  };
}

export interface HookOutput {
  continue?: false;
  stopReason?: string;
  hookSpecificOutput: {
    hookEventName: 'PreToolUse';
    permissionDecision: 'allow' | 'deny' | 'ask';
    permissionDecisionReason: string;
    /** The tool's input as it runs instead: the arguments an operator amended. */
    updatedInput?: Record<string, unknown>;
    /** Context for the model: what the operator changed. */
    additionalContext?: string;
  };
}

/** The hook input, or why it is not one Gatehouse can decide (the command then blocks the call). */
export function parseHookInput(text: string): HookInput | { problem: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { problem: 'the hook input on stdin is not JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { problem: 'the hook input on stdin is not a JSON object' };
  const v = value as Record<string, unknown>;
  const event = v.hook_event_name;
  if (event !== 'PreToolUse' && event !== 'PostToolUse')
    return {
      problem:
        'the hook input is not a PreToolUse or PostToolUse event (hook_event_name): install this hook under "PreToolUse" and "PostToolUse"',
    };
  if (event === 'PostToolUse' && !Object.hasOwn(v, 'tool_response'))
    return { problem: 'the PostToolUse hook input has no tool_response' };
  if (typeof v.tool_name !== 'string' || v.tool_name === '') return { problem: 'the hook input has no tool_name' };
  if (typeof v.tool_input !== 'object' || v.tool_input === null || Array.isArray(v.tool_input))
    return { problem: 'the hook input has no tool_input object' };
  if (typeof v.session_id !== 'string' || v.session_id === '') return { problem: 'the hook input has no session_id' };
  if (typeof v.cwd !== 'string') return { problem: 'the hook input has no cwd' };
  return {
    event,
    sessionId: v.session_id,
    cwd: v.cwd,
    toolName: v.tool_name,
    toolInput: v.tool_input as Record<string, unknown>,
    ...(event === 'PostToolUse' ? { toolResponse: v.tool_response } : {}),
  };
}

/** The Gatehouse call of a hook input; `projectDir` is CLAUDE_PROJECT_DIR (undefined or '' when not set). */
export function toolCallOf(
  input: Pick<HookInput, 'cwd' | 'toolName' | 'toolInput'> & Partial<HookInput>,
  projectDir: string | undefined,
): ToolCall {
  const context: Record<string, unknown> = {};
  const cwd = directory(input.cwd);
  const project = projectDir ? directory(projectDir) : cwd;
  // A directory that is not absolute is left out: a condition reading it cannot be decided, so an allow
  // rule over it never applies (docs/spec.md section 3.5).
  if (cwd !== undefined) context.cwd = cwd;
  if (project !== undefined) context.project_dir = project;
  return { tool: input.toolName, args: input.toolInput, context };
}

/** The tool's result of a PostToolUse input, with the call that produced it (as toolCallOf() names it). */
export function toolResultOf(input: HookInput, projectDir: string | undefined): ToolResult {
  const { tool, args, context } = toolCallOf(input, projectDir);
  return { tool, ...(args ? { args } : {}), result: input.toolResponse ?? null, ...(context ? { context } : {}) };
}

/** Claude Code names an MCP server's tool `mcp__SERVER__TOOL`: only its output can be replaced by a hook. */
export function isMcpTool(toolName: string): boolean {
  return toolName.startsWith('mcp__');
}

/**
 * The PostToolUse output for a guardResult() answer; undefined when the output is handed on as it is.
 * Otherwise the output is replaced (`updatedToolOutput`, and for an MCP tool `updatedMCPToolOutput`
 * too, the name older versions read) by the redacted one, or by the message in the output's own
 * shape. Whether Claude Code honours a replacement depends on its version, and for built-in tools
 * it has been reported not to, so what must not be used is also said: a withheld output and a
 * built-in tool's redaction `block` with a reason (which Claude reads in any version); an MCP tool's
 * redaction adds context instead.
 */
export function postHookOutputOf(result: GuardResult, input: HookInput): PostHookOutput | undefined {
  const mcp = isMcpTool(input.toolName);
  const tool = input.toolName;
  const replace = (value: unknown) => ({
    hookEventName: 'PostToolUse' as const,
    updatedToolOutput: value,
    ...(mcp ? { updatedMCPToolOutput: value } : {}),
  });
  if (result.decision === 'allow') {
    if (!result.redacted) return undefined;
    if (mcp)
      return {
        hookSpecificOutput: {
          ...replace(result.output),
          additionalContext: `Gatehouse redacted ${found(result.findings)} in the output of "${tool}". Do not try to recover what was redacted.`,
        },
      };
    return {
      decision: 'block',
      reason: `The output of "${tool}" holds what policy says must not reach you: ${found(result.findings)}. It was replaced by a redacted copy; where Claude Code still shows the original (it may not replace a built-in tool's output), treat those values as withheld: do not repeat, store or act on them. Tell the user.`,
      hookSpecificOutput: replace(result.output),
    };
  }
  const approval = result.approval;
  const reason =
    result.decision === 'require_approval' && approval !== undefined && !result.message.includes(approval.id)
      ? `${result.message} (Gatehouse review ${approval.id}: ${approval.status}.)`
      : result.message;
  return withheldOutputOf(input, reason);
}

/** A withheld output: `block` with the reason, and the output replaced by it. */
function withheldOutputOf(input: HookInput, reason: string): PostHookOutput {
  const note = isMcpTool(input.toolName)
    ? ''
    : " Where Claude Code still shows the tool's output (it may not replace a built-in tool's), do not repeat, store or act on it.";
  return {
    decision: 'block',
    reason: `${reason}${note}`,
    hookSpecificOutput: {
      hookEventName: 'PostToolUse',
      updatedToolOutput: withheldOutput(input.toolResponse, reason),
      ...(isMcpTool(input.toolName) ? { updatedMCPToolOutput: withheldOutput(input.toolResponse, reason) } : {}),
    },
  };
}

/** What a withheld MCP output becomes: the message, in the shape the tool answered. */
function withheldOutput(response: unknown, text: string): unknown {
  if (Array.isArray(response)) return [{ type: 'text', text }];
  if (response !== null && typeof response === 'object' && Array.isArray((response as { content?: unknown }).content))
    return { content: [{ type: 'text', text }], isError: true };
  return text;
}

/** The findings, named by type and path (never the values): `email at /content/0/text, card at …`. */
function found(findings: readonly { type: string; path: string }[]): string {
  if (findings.length === 0) return 'findings';
  const shown = findings.slice(0, 10).map((f) => `${f.type} at ${f.path === '' ? '/' : f.path}`);
  return findings.length > 10 ? `${shown.join(', ')} and ${findings.length - 10} more` : shown.join(', ');
}

/** A PostToolUse output for a result Gatehouse could not check: withheld. */
export function postDenyOutput(input: HookInput, reason: string): PostHookOutput {
  return withheldOutputOf(input, reason);
}

/** An absolute directory, normalised (`.`, `..`, repeated `/`), ending in `/`; undefined when relative. */
export function directory(path: string): string | undefined {
  if (!posix.isAbsolute(path) || path.includes('\0')) return undefined;
  const normal = posix.normalize(path);
  return normal.endsWith('/') ? normal : `${normal}/`;
}

/** The hook output for a gate() result. */
export function hookOutputOf(result: GateResult, onPending: OnPending, tool = 'tool'): HookOutput {
  const say = (permissionDecision: 'allow' | 'deny' | 'ask', permissionDecisionReason: string): HookOutput => ({
    hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision, permissionDecisionReason },
  });
  switch (result.decision) {
    case 'allow': {
      if (result.amended === undefined) return say('allow', result.message || 'allowed by Gatehouse');
      const note = amendedNote(tool, result.amended);
      const out = say('allow', note);
      return {
        ...out,
        hookSpecificOutput: { ...out.hookSpecificOutput, updatedInput: result.amended.args, additionalContext: note },
      };
    }
    case 'deny':
      return say('deny', result.message || `Gatehouse denied it (${result.reason})`);
    case 'abort': {
      const reason = result.message || `Gatehouse ended the run (${result.reason})`;
      return {
        continue: false,
        stopReason: `Gatehouse ended this session's run: ${result.reason}`,
        ...say('deny', reason),
      };
    }
    case 'require_approval': {
      const a = result.approval;
      if (a === undefined)
        return say('deny', result.message || 'Gatehouse requires an approval for this call, and none could be filed');
      if (a.status === 'pending' && onPending === 'ask') {
        return say('ask', `Gatehouse approval ${a.id} is still pending. ${result.message}`.trim());
      }
      const retry =
        a.status === 'pending'
          ? ' Once an operator grants it, retry the same call unchanged: the grant is used once.'
          : '';
      return say('deny', `${result.message} (Gatehouse approval ${a.id}: ${a.status}.)${retry}`.trim());
    }
  }
  // A decision this version does not know (a newer client or server) never allows.
  return say(
    'deny',
    `Gatehouse answered ${String(result.decision)}, which this hook does not know: the call is blocked`,
  );
}

/** A refusal for a call Gatehouse was never asked about (no configuration, unreadable input). */
export function denyOutput(reason: string): HookOutput {
  return {
    hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason },
  };
}
