// Claude Code's PreToolUse hook, as `gatehouse hook claude-code` speaks it: the hook input Claude Code
// writes on stdin becomes a Gatehouse call, and a gate() result becomes the hook output it reads on
// stdout (https://code.claude.com/docs/en/hooks, "PreToolUse" and "PreToolUse decision control").
//
// - The tool is Claude Code's tool name as sent (`Bash`, `Write`, `mcp__github__create_issue`), the
//   arguments its `tool_input`, the run its `session_id`.
// - The context (`$context.` in policies) is `cwd` and `project_dir`: CLAUDE_PROJECT_DIR when set, else
//   `cwd`; both absolute, normalised, with a trailing `/`, so that `path(file_path) startswith
//   $context.project_dir` is a sound prefix test (`/repo/` is not a prefix of `/repository/x`).
// - allow → "allow"; deny → "deny" with the message; abort → "deny", and `continue: false` so that
//   Claude Code stops (the run ends, as abort asks); require_approval still unanswered → "deny" naming
//   the approval (retry the same call once it is granted) or, with --on-pending ask, "ask".
import { posix } from 'node:path';
import type { GateResult, ToolCall } from '../../client/index.js';

export type OnPending = 'ask' | 'deny';

/** What the hook reads of Claude Code's input (other fields, such as transcript_path, are not used). */
export interface HookInput {
  sessionId: string;
  cwd: string;
  toolName: string;
  toolInput: Record<string, unknown>;
}

export interface HookOutput {
  continue?: false;
  stopReason?: string;
  hookSpecificOutput: {
    hookEventName: 'PreToolUse';
    permissionDecision: 'allow' | 'deny' | 'ask';
    permissionDecisionReason: string;
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
  if (v.hook_event_name !== 'PreToolUse')
    return {
      problem: 'the hook input is not a PreToolUse event (hook_event_name): install this hook under "PreToolUse"',
    };
  if (typeof v.tool_name !== 'string' || v.tool_name === '') return { problem: 'the hook input has no tool_name' };
  if (typeof v.tool_input !== 'object' || v.tool_input === null || Array.isArray(v.tool_input))
    return { problem: 'the hook input has no tool_input object' };
  if (typeof v.session_id !== 'string' || v.session_id === '') return { problem: 'the hook input has no session_id' };
  if (typeof v.cwd !== 'string') return { problem: 'the hook input has no cwd' };
  return {
    sessionId: v.session_id,
    cwd: v.cwd,
    toolName: v.tool_name,
    toolInput: v.tool_input as Record<string, unknown>,
  };
}

/** The Gatehouse call of a hook input; `projectDir` is CLAUDE_PROJECT_DIR (undefined or '' when not set). */
export function toolCallOf(input: HookInput, projectDir: string | undefined): ToolCall {
  const context: Record<string, unknown> = {};
  const cwd = directory(input.cwd);
  const project = projectDir ? directory(projectDir) : cwd;
  // A directory that is not absolute is left out: a condition reading it cannot be decided, so an allow
  // rule over it never applies (docs/spec.md section 3.5).
  if (cwd !== undefined) context.cwd = cwd;
  if (project !== undefined) context.project_dir = project;
  return { tool: input.toolName, args: input.toolInput, context };
}

/** An absolute directory, normalised (`.`, `..`, repeated `/`), ending in `/`; undefined when relative. */
export function directory(path: string): string | undefined {
  if (!posix.isAbsolute(path) || path.includes('\0')) return undefined;
  const normal = posix.normalize(path);
  return normal.endsWith('/') ? normal : `${normal}/`;
}

/** The hook output for a gate() result. */
export function hookOutputOf(result: GateResult, onPending: OnPending): HookOutput {
  const say = (permissionDecision: 'allow' | 'deny' | 'ask', permissionDecisionReason: string): HookOutput => ({
    hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision, permissionDecisionReason },
  });
  switch (result.decision) {
    case 'allow':
      return say('allow', result.message || 'allowed by Gatehouse');
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
