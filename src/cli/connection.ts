// Where the client commands (`mcp-proxy`, `hook`) find Gatehouse: GATEHOUSE_URL and GATEHOUSE_TOKEN,
// read here and nowhere else, so that the modules they call stay free of the environment.
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

export interface Connection {
  url: string;
  token: string;
}

/** The URL and token of the environment, or what is missing or wrong. */
export function connectionOf(env: NodeJS.ProcessEnv): Connection | { problem: string } {
  const url = env.GATEHOUSE_URL ?? '';
  const token = env.GATEHOUSE_TOKEN ?? '';
  if (url === '') return { problem: 'GATEHOUSE_URL is not set (the Gatehouse service, e.g. http://127.0.0.1:8080)' };
  if (!/^https?:\/\/[^/]/.test(url)) return { problem: 'GATEHOUSE_URL must be an http:// or https:// URL' };
  if (token === '')
    return { problem: 'GATEHOUSE_TOKEN is not set (the bearer token Gatehouse identifies this agent by)' };
  return { url, token };
}

/**
 * Where commands keep state across processes: GATEHOUSE_STATE_DIR, else $XDG_STATE_HOME/gatehouse
 * (an absolute XDG_STATE_HOME only, as the XDG Base Directory specification asks), else
 * ~/.local/state/gatehouse.
 */
export function stateDirOf(env: NodeJS.ProcessEnv): string {
  if (env.GATEHOUSE_STATE_DIR) return env.GATEHOUSE_STATE_DIR;
  if (env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME)) return join(env.XDG_STATE_HOME, 'gatehouse');
  return join(homedir(), '.local', 'state', 'gatehouse');
}

/** The environment an upstream MCP server is started with: the proxy's own, without its Gatehouse token. */
export function upstreamEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && k !== 'GATEHOUSE_TOKEN') out[k] = v;
  return out;
}
