// `gatehouse hook claude-code [--wait S] [--on-pending ask|deny]`: Claude Code's PreToolUse and
// PostToolUse hook. One process per event: it reads the hook input on stdin, asks Gatehouse (before the
// call, gate(): decide, file an approval and wait up to --wait, redeem a grant; after it,
// guardResult(): the result through the result guards), prints the hook output on stdout and exits 0
// (./hook/claude-code.ts; docs/claude-code.md).
//
// Claude Code lets a tool run when its hook fails (any exit but 0 and 2) or outlives the hook's
// `timeout`, so this command never does either on purpose: input it cannot read exits 2 with the reason
// on stderr (Claude Code's documented "block"), any other failure answers "deny", and everything it
// asks Gatehouse is cut off --wait + 5 seconds after it started, which then answers "deny" too.
import { join } from 'node:path';
import { createClient, fileMemory } from '../client/index.js';
import { nodeHttpFetch } from '../client/node-http.js';
import { defineCommand, parseCommand, seconds, usageError } from './args.js';
import { connectionOf, stateDirOf } from './connection.js';
import {
  denyOutput,
  type HookInput,
  hookOutputOf,
  parseHookInput,
  postDenyOutput,
  postHookOutputOf,
  toolCallOf,
  toolResultOf,
} from './hook/claude-code.js';
import { EXIT, type Io } from './io.js';

export const HOOK = defineCommand({
  name: 'hook',
  usage: `usage: gatehouse hook claude-code [--wait S] [--on-pending deny|ask]

Claude Code's PreToolUse hook: reads the hook input on stdin, asks Gatehouse about the tool call
(tool: the tool's name as Claude Code sends it; args: tool_input; run: session_id; context: cwd and
project_dir, CLAUDE_PROJECT_DIR or else cwd, each ending in /) and prints the permission decision:
allow; deny with the reason (abort also stops Claude Code); or, when an approval is needed, files it,
waits up to --wait seconds for an operator, and allows once it is granted. Unanswered by then: deny,
naming the approval (the same call retried in the same session waits on the same approval), or ask.

Installed under PostToolUse too, it sends the tool's output (tool_response) through Gatehouse's
result guards: nothing printed when it may be used as it is; otherwise the output replaced
(updatedToolOutput; updatedMCPToolOutput too for an MCP tool) by the redacted one or by the message
saying it was withheld, and "decision": "block" with the reason (not for an MCP tool's redaction).
A review an operator must make is waited for up to --wait.

options:
  --wait S                  seconds to wait for an operator (default 50); keep --wait + 10 within the
                            hook's "timeout" in settings.json (60 s in the documented entry)
  --on-pending deny|ask     an approval still pending after --wait: deny naming it (default), or ask
                            the person at the keyboard (their yes runs the call without the approval)
  -h, --help                show this help

environment: GATEHOUSE_URL, GATEHOUSE_TOKEN; CLAUDE_PROJECT_DIR (Claude Code sets it); GATEHOUSE_STATE_DIR
(where approvals in progress are kept; default $XDG_STATE_HOME/gatehouse or ~/.local/state/gatehouse)

exit status: 0 a decision is printed (allow, deny or ask; after the call, nothing or a block); 2 the
input is not a PreToolUse or PostToolUse hook input, or a usage error (Claude Code blocks the call on 2
and shows stderr)
`,
  options: { wait: { type: 'string' }, 'on-pending': { type: 'string' } },
  positionals: { min: 1, max: 1, name: 'the agent whose hook this is (claude-code)' },
});

/** Beyond --wait, for the requests around the wait (decide, file, redeem) before the hook answers anyway. */
const SLACK_MS = 5_000;

export async function runHook(argv: string[], io: Io, stdin: () => Promise<string> = readStdin): Promise<number> {
  const parsed = parseCommand(argv, HOOK, io);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const usage = (problem: string): number => usageError(io, 'hook', problem, HOOK.usage);
  if (positionals[0] !== 'claude-code') return usage(`unknown agent '${positionals[0]}': the one hook is claude-code`);
  const waitS = seconds(values.wait, 50, 0, 3_600);
  if (waitS === undefined) return usage('--wait must be a whole number of seconds from 0 to 3600');
  const onPending = values['on-pending'] ?? 'deny';
  if (onPending !== 'deny' && onPending !== 'ask') return usage("--on-pending must be 'deny' or 'ask'");

  const deadline = AbortSignal.timeout(waitS * 1000 + SLACK_MS);
  const answer = (output: object): number => {
    io.out(`${JSON.stringify(output)}\n`);
    return EXIT.ok;
  };
  const block = (problem: string): number => {
    io.err(`gatehouse hook: ${problem}; the tool call is blocked\n`);
    return EXIT.invalid;
  };

  let text: string;
  try {
    text = await Promise.race([stdin(), aborted(deadline)]);
  } catch {
    return block('the hook input did not arrive on stdin in time');
  }
  const input = parseHookInput(text);
  if ('problem' in input) return block(input.problem);
  const connection = connectionOf(process.env);
  if (input.event === 'PostToolUse') {
    if ('problem' in connection)
      return answer(
        postDenyOutput(
          input,
          `Gatehouse is not configured for this hook: ${connection.problem}. The output of "${input.toolName}" was withheld.`,
        ),
      );
    return afterTheCall(input, connection, waitS, deadline, answer);
  }
  if ('problem' in connection)
    return answer(
      denyOutput(`Gatehouse is not configured for this hook: ${connection.problem}. The call was not run.`),
    );

  try {
    const client = createClient({
      url: connection.url,
      token: connection.token,
      // One process per tool call: the approval filed for a call must outlive it, so that the same call
      // retried in the same session waits on (and redeems) that approval.
      memory: fileMemory(join(stateDirOf(process.env), 'approvals')),
      // Every request ends by the deadline: a request cut off fails closed (deny), and an approval left
      // pending stays in the store for the retry, which a cancelled gate() would have withdrawn.
      // node:http, not the global fetch, whose first use costs more than the rest of the hook.
      fetch: (url, init) => nodeHttpFetch(url, { ...init, signal: AbortSignal.any([init.signal, deadline]) }),
    });
    const result = await gateBy(
      client.gate(toolCallOf(input, process.env.CLAUDE_PROJECT_DIR), {
        runId: input.sessionId,
        maxWaitMs: waitS * 1000,
      }),
      deadline,
    );
    return answer(hookOutputOf(result, onPending, input.toolName));
  } catch (err) {
    return answer(
      denyOutput(
        `Gatehouse could not decide this call (${err instanceof Error ? err.message : String(err)}). The call was not run.`,
      ),
    );
  }
}

/**
 * PostToolUse: the tool's result through guardResult() (POST /inspect; a review an operator must make
 * is filed and waited for up to --wait). Handed on as it is: no output. Anything else: ./hook/claude-code.ts.
 */
async function afterTheCall(
  input: HookInput,
  connection: { url: string; token: string },
  waitS: number,
  deadline: AbortSignal,
  answer: (output: object) => number,
): Promise<number> {
  try {
    const client = createClient({
      url: connection.url,
      token: connection.token,
      fetch: (url, init) => nodeHttpFetch(url, { ...init, signal: AbortSignal.any([init.signal, deadline]) }),
    });
    const result = await gateBy(
      client.guardResult(toolResultOf(input, process.env.CLAUDE_PROJECT_DIR), {
        runId: input.sessionId,
        maxWaitMs: waitS * 1000,
      }),
      deadline,
    );
    const output = postHookOutputOf(result, input);
    return output === undefined ? EXIT.ok : answer(output);
  } catch (err) {
    return answer(
      postDenyOutput(
        input,
        `Gatehouse could not check the output of "${input.toolName}" (${err instanceof Error ? err.message : String(err)}): it was withheld.`,
      ),
    );
  }
}

/** gate()'s answer, or a throw at the deadline (a gate() that outlives its requests is a bug, never an allow). */
function gateBy<T>(gate: Promise<T>, deadline: AbortSignal): Promise<T> {
  return Promise.race([gate, aborted(deadline)]);
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = (): void => reject(new Error('Gatehouse did not answer in time'));
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
