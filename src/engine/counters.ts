// Where a caller stands in the budgets and rate limits that can apply to it (GET /budgets, docs/spec.md
// section 2.9): the limit (its id, maximum, window, scope, what it counts and the tools it selects,
// never who else it selects) and its counter in the current window. An admin sees every limit of
// the set with the counters of everyone, the fullest first.
import type { CounterRow } from '../budgets/store.js';
import { assignMembers, type JsonObject, type JsonValue } from '../json/value.js';
import { counterKey, limitsForCaller, putAmount, standingObject } from '../policy/limits.js';
import { listOf } from '../policy/match.js';
import type { Identity, Limit } from '../policy/model.js';
import { limitsOf } from './limits.js';
import type { EngineParts } from './parts.js';

export async function standingsOf(
  parts: EngineParts,
  identity: Identity,
  options: { admin: boolean; max: number },
): Promise<JsonObject> {
  const set = parts.policies.current();
  const limits = options.admin ? set.limits : limitsForCaller(set, identity);
  const body: JsonObject = { env: set.env, limits: [] };
  // No limit: nothing to read, and no database needed.
  if (limits.length === 0) return body;
  const service = limitsOf(parts.limits);
  body.limits = await service.transaction(async (tx) => {
    const out: JsonObject[] = [];
    for (const limit of limits) {
      const item = describe(limit);
      if (options.admin) {
        const { rows, more } = await service.store.list(tx, limit, options.max);
        item.counters = rows.map((r) => counterObject(limit, r));
        item.more = more;
      } else if (limit.scope === 'run') {
        // Every run of the caller's with a counter in the current window.
        const keys = await service.store.runKeys(tx, limit, identity.user);
        const rows: CounterRow[] = [];
        for (const key of keys) rows.push({ key, standing: await service.store.read(tx, limit, key) });
        item.counters = rows.map((r) => counterObject(limit, r));
      } else {
        const key = counterKey(limit.scope, identity, undefined);
        // A team (or agent) budget for a caller whose token has none: every call it selects is refused.
        item.counters =
          key === null ? [] : [counterObject(limit, { key, standing: await service.store.read(tx, limit, key) })];
        if (key === null) item.countable = false;
      }
      out.push(item);
    }
    return out;
  });
  return body;
}

/** A limit as GET /budgets shows it: what it counts and where, never the teams, users or agents it selects. */
function describe(limit: Limit): JsonObject {
  const out: JsonObject = {
    id: limit.id,
    type: limit.type,
    policy: limit.policy,
    scope: limit.scope,
    on_exceed: limit.onExceed,
  };
  if (limit.type === 'rate_limit') {
    out.calls = limit.calls;
    out.per = limit.perText;
  } else {
    const m = limit.measure;
    out.counts = 'usd' in m ? 'usd' : 'calls' in m ? 'calls' : 'sum';
    if ('sum' in m) out.sum = m.sum.text;
    putAmount(out, 'usd' in m ? 'max_usd' : 'max', limit.max);
    out.per = limit.per.text;
  }
  for (const name of ['tools', 'kinds', 'tags', 'envs'] as const) {
    if (limit.selectors[name] !== undefined) out[name] = listOf(limit.selectors, name) as JsonValue;
  }
  return out;
}

/** A counter: whose (from its key) and where it stands, its numbers as counted (assignMembers keeps them exact). */
function counterObject(limit: Limit, row: CounterRow): JsonObject {
  return assignMembers({ for: keyObject(row.key) }, standingObject(limit, row.standing));
}

/** `user:u1` → {user: "u1"}; `run:u1\nr7` → {user: "u1", run: "r7"}; `global` → {}. */
function keyObject(key: string): JsonObject {
  if (key === 'global') return {};
  const colon = key.indexOf(':');
  const kind = key.slice(0, colon);
  const rest = key.slice(colon + 1);
  if (kind === 'run') {
    const nl = rest.indexOf('\n');
    return { user: rest.slice(0, nl), run: rest.slice(nl + 1) };
  }
  return { [kind]: rest };
}
