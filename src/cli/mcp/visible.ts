// Which upstream tools `gatehouse mcp-proxy` lists: those the caller could ever run, by the tool
// inventory (GET /tools, docs/spec.md section 5.5). Hiding is a courtesy to the model, never the
// enforcement: every tools/call is decided by /decide whatever the list showed.
//
// A Gatehouse tool name is the prefix followed by the upstream name. An inventory item with that exact
// name speaks for it: its status is what /decide answers for the name. Otherwise the glob items that
// match it do: each speaks for the names only it matches; for a name several match, the inventory
// cannot say, so the tool is hidden when any of them never runs (`deny`, `abort`) and listed when all
// can (`allow`, `require_approval`, `depends`). A tool no item matches is not listed: /decide would
// decide it as kind `unknown`, which the `side_effects` default denies, and the inventory cannot tell
// what a rule naming it would say; catalogue a tool (or a glob: `github.*`) to expose it. A name
// Gatehouse refuses as a tool name (spec section 5.1) is never listed either.
import { compileGlob } from '../../policy/glob.js';
import { TOOL_NAME_PATTERN } from '../../policy/request.js';
import type { ToolsResponse } from '../../client/index.js';

const TOOL_NAME = new RegExp(TOOL_NAME_PATTERN);

/** Statuses under which a call can run (at once, after an approval, or for some arguments). */
const RUNNABLE: ReadonlySet<string> = new Set(['allow', 'require_approval', 'depends']);

export type Visibility = { listed: true } | { listed: false; why: 'not_a_tool_name' | 'not_catalogued' | 'never_runs' };

/** Is the inventory what GET /tools answers? Anything else cannot filter a list (the caller answers an error). */
export function checkInventory(inventory: unknown): asserts inventory is ToolsResponse {
  const tools = (inventory as { tools?: unknown } | null)?.tools;
  if (!Array.isArray(tools)) throw new TypeError('the tool inventory has no list of tools');
  for (const entry of tools as unknown[]) {
    const e = entry as { name?: unknown; policy?: unknown; status?: unknown } | null;
    if (typeof e?.name !== 'string' || typeof e.policy !== 'string' || typeof e.status !== 'string') {
      throw new TypeError('the tool inventory holds an entry without a name, a policy and a status');
    }
  }
}

/** A function from a Gatehouse tool name to whether the list shows it, compiled once per inventory. */
export function visibilityOf(inventory: ToolsResponse): (gatehouseName: string) => Visibility {
  const exact = new Map<string, string>();
  const globs: { test(name: string): boolean; status: string }[] = [];
  for (const entry of inventory.tools) {
    const glob = compileGlob(entry.name); // an entry the service loaded always compiles; if not, this throws: no list
    if (!glob.literal) globs.push({ test: glob.test, status: entry.status });
    else if (!exact.has(entry.name)) exact.set(entry.name, entry.status); // one file at most catalogues a name (spec 2.6)
  }
  return (name) => {
    if (!TOOL_NAME.test(name)) return { listed: false, why: 'not_a_tool_name' };
    const own = exact.get(name);
    const statuses = own !== undefined ? [own] : globs.filter((g) => g.test(name)).map((g) => g.status);
    if (statuses.length === 0) return { listed: false, why: 'not_catalogued' };
    // An unknown status (a newer server) is treated like one that never runs: fail closed.
    return statuses.every((s) => RUNNABLE.has(s)) ? { listed: true } : { listed: false, why: 'never_runs' };
  };
}

/** The upstream tools the list shows, in their order, each untouched (its raw schema relayed as the upstream wrote it). */
export function visibleTools<T extends { name: string }>(
  tools: readonly T[],
  inventory: ToolsResponse,
  prefix: string,
): T[] {
  const visibility = visibilityOf(inventory);
  return tools.filter((tool) => visibility(`${prefix}${tool.name}`).listed);
}
