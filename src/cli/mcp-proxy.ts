// `gatehouse mcp-proxy [--prefix NAME] -- COMMAND ARGS…` or `… --upstream URL`: a stdio MCP server
// that wraps an upstream MCP server (a command it starts, or a Streamable HTTP URL) and asks
// Gatehouse before every tool call (./mcp/proxy.ts; docs/mcp.md). stdout is the MCP channel:
// everything this command says goes to stderr.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { createClient } from '../client/index.js';
import { defineCommand, parseCommand, seconds, usageError } from './args.js';
import { connectionOf, upstreamEnv } from './connection.js';
import { EXIT, type Io } from './io.js';
import { createProxyServer } from './mcp/proxy.js';

export const MCP_PROXY = defineCommand({
  name: 'mcp-proxy',
  usage: `usage: gatehouse mcp-proxy [--prefix NAME] [--wait S] [--progress-interval S] -- COMMAND [ARGS...]
       gatehouse mcp-proxy [--prefix NAME] [--wait S] [--progress-interval S] --upstream URL

A stdio MCP server wrapping an upstream MCP server (COMMAND, started with this environment minus
GATEHOUSE_TOKEN; or a Streamable HTTP URL). Every tools/call is decided by Gatehouse first: allowed
calls are forwarded, anything else is answered with an isError result carrying the decision's message
and never reaches the upstream. The upstream's result goes through Gatehouse's result guards
(POST /inspect) before the client sees it: relayed, redacted, or withheld (an isError result with
the message), also when Gatehouse cannot be asked. An abort ends the session: every later tools/call of this process is
refused with the abort's message until the MCP client restarts the proxy. tools/list leaves out the
tools GET /tools says never run (and the tools no catalogue names). Resources, prompts, completions
and logging are relayed as they are.

The Gatehouse tool name is NAME followed by the upstream tool's name (--prefix github. makes
create_issue github.create_issue). The run id (run.id) is a UUID per proxy process, printed on stderr.

options:
  --prefix NAME            prepended to upstream tool names to name them to Gatehouse (default: none)
  --upstream URL           a Streamable HTTP upstream instead of a command
  --wait S                 how long a call waits for an operator's approval, in seconds (default 600)
  --progress-interval S    notifications/progress this often while an approval is pending, to callers
                           that sent a progress token (default 10)
  -h, --help               show this help

environment: GATEHOUSE_URL (the service), GATEHOUSE_TOKEN (this agent's bearer token)

exit status: 0 the MCP client closed the connection; 1 the upstream could not start or went away;
2 a usage error or a missing GATEHOUSE_URL or GATEHOUSE_TOKEN
`,
  options: {
    prefix: { type: 'string' },
    upstream: { type: 'string' },
    wait: { type: 'string' },
    'progress-interval': { type: 'string' },
  },
  positionals: { min: 0, max: 0 },
});

export async function runMcpProxy(argv: string[], io: Io): Promise<number> {
  // Everything after `--` is the upstream's command line, never this command's options (nor its --help).
  const dash = argv.indexOf('--');
  const own = dash === -1 ? argv : argv.slice(0, dash);
  const command = dash === -1 ? [] : argv.slice(dash + 1);
  const parsed = parseCommand(own, MCP_PROXY, io);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const usage = (problem: string): number => usageError(io, 'mcp-proxy', problem, MCP_PROXY.usage);
  if (dash !== -1 && command.length === 0) return usage('missing COMMAND after --');
  if (command.length > 0 && values.upstream !== undefined)
    return usage('give either -- COMMAND or --upstream URL, not both');
  if (command.length === 0 && values.upstream === undefined)
    return usage('missing the upstream server: -- COMMAND [ARGS...] or --upstream URL');
  let upstreamUrl: URL | undefined;
  if (values.upstream !== undefined) {
    upstreamUrl = URL.canParse(values.upstream) ? new URL(values.upstream) : undefined;
    if (upstreamUrl === undefined || !/^https?:$/.test(upstreamUrl.protocol))
      return usage('--upstream must be an http:// or https:// URL');
  }
  const waitS = seconds(values.wait, 600, 0, 86_400);
  if (waitS === undefined) return usage('--wait must be a whole number of seconds from 0 to 86400');
  const everyS = seconds(values['progress-interval'], 10, 1, 50);
  if (everyS === undefined) return usage('--progress-interval must be a whole number of seconds from 1 to 50');
  const connection = connectionOf(process.env);
  if ('problem' in connection) {
    io.err(`gatehouse mcp-proxy: ${connection.problem}\n`);
    return EXIT.invalid;
  }

  const upstream = new Client({ name: 'gatehouse-mcp-proxy', version: VERSION });
  const transport: Transport =
    upstreamUrl !== undefined
      ? new StreamableHTTPClientTransport(upstreamUrl)
      : new StdioClientTransport({
          command: command[0]!,
          args: command.slice(1),
          env: upstreamEnv(process.env),
          stderr: 'inherit',
        });
  try {
    await upstream.connect(transport);
  } catch (err) {
    io.err(
      `gatehouse mcp-proxy: the upstream server did not start: ${err instanceof Error ? err.message : String(err)}\n`,
    );
    await transport.close().catch(() => undefined);
    return EXIT.failed;
  }

  const runId = randomUUID();
  const server = createProxyServer({
    upstream,
    gatehouse: createClient({ url: connection.url, token: connection.token }),
    prefix: values.prefix ?? '',
    runId,
    maxWaitMs: waitS * 1000,
    progressEveryMs: everyS * 1000,
    onSessionEnd: ({ tool }) =>
      io.err(
        `gatehouse mcp-proxy: Gatehouse aborted ${tool}: the session has ended, and every later tool call is refused until the client restarts the proxy\n`,
      ),
  });
  const upstreamName = upstream.getServerVersion()?.name ?? 'the upstream server';
  io.err(`gatehouse mcp-proxy: run ${runId}, relaying ${upstreamName} with Gatehouse at ${connection.url}\n`);

  // Until the MCP client goes (stdin ends, or a stop signal) or the upstream does.
  let stop = (_who: 'client' | 'upstream'): void => undefined;
  const ended = new Promise<'client' | 'upstream'>((resolve) => (stop = resolve));
  const clientGone = (): void => stop('client');
  upstream.onclose = () => stop('upstream');
  server.onclose = clientGone;
  process.stdin.once('end', clientGone);
  process.once('SIGTERM', clientGone);
  process.once('SIGINT', clientGone);
  await server.connect(new StdioServerTransport());
  const who = await ended;
  upstream.onclose = undefined;
  process.stdin.off('end', clientGone);
  process.off('SIGTERM', clientGone);
  process.off('SIGINT', clientGone);
  await server.close().catch(() => undefined);
  await upstream.close().catch(() => undefined); // stops the upstream command (SIGTERM, then SIGKILL)
  if (who === 'upstream') {
    io.err(`gatehouse mcp-proxy: ${upstreamName} closed the connection\n`);
    return EXIT.failed;
  }
  return EXIT.ok;
}

/** The version in package.json (two directories up, in src/cli/ and dist/cli/ alike). */
const VERSION = ((): string => {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version?: unknown;
  };
  return typeof manifest.version === 'string' ? manifest.version : '0';
})();
