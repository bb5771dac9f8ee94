// Which upstream tools `gatehouse mcp-proxy` lists: those the caller could ever run, by the tool
// inventory (GET /tools, docs/spec.md section 5.5). Hiding is a courtesy to the model, never the
// enforcement: every tools/call is decided by /decide whatever the list showed.
//
// A Gatehouse tool name is the prefix followed by the upstream name. For that name, each policy file's
// catalogue describes it by its exact entry, else by its first glob entry that matches (spec section
// 2.3, step 1). The tool is listed when at least one file describes it and no description's status is
// `deny` or `abort`: a file answers under every description and its most severe answer counts, so
// one description that never runs means the call never runs. A tool no catalogue describes is not
// listed: /decide would decide it as kind `unknown`, which the `side_effects` default denies, and the
// inventory cannot tell what a rule naming it would say; catalogue a tool (or a glob: `github.*`) to
// expose it. A name Gatehouse refuses as a tool name (spec section 5.1) is never listed either.
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
  // Per file, in load order: its exact names, and its globs in order.
  const files = new Map<string, { exact: Map<string, string>; globs: { test(name: string): boolean; status: string }[] }>();
  for (const entry of inventory.tools) {
    let file = files.get(entry.policy);
    if (file === undefined) files.set(entry.policy, (file = { exact: new Map(), globs: [] }));
    const glob = compileGlob(entry.name); // an entry the service loaded always compiles; if not, this throws: no list
    if (glob.literal) file.exact.set(entry.name, entry.status);
    else file.globs.push({ test: glob.test, status: entry.status });
  }
  return (name) => {
    if (!TOOL_NAME.test(name)) return { listed: false, why: 'not_a_tool_name' };
    const statuses: string[] = [];
    for (const file of files.values()) {
      const status = file.exact.get(name) ?? file.globs.find((g) => g.test(name))?.status;
      if (status !== undefined) statuses.push(status);
    }
    if (statuses.length === 0) return { listed: false, why: 'not_catalogued' };
    // An unknown status (a newer server) is treated like one that never runs: fail closed.
    return statuses.every((s) => RUNNABLE.has(s)) ? { listed: true } : { listed: false, why: 'never_runs' };
  };
}

/** The upstream tools the list shows, in their order, each untouched (its raw schema relayed as the upstream wrote it). */
export function visibleTools<T extends { name: string }>(tools: readonly T[], inventory: ToolsResponse, prefix: string): T[] {
  const visibility = visibilityOf(inventory);
  return tools.filter((tool) => visibility(`${prefix}${tool.name}`).listed);
}
