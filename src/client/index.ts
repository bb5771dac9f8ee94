// `gatehouse-pdp/client`: the TypeScript client every adapter is built on (docs/client.md). It needs nothing
// beyond Node's fetch. `gate()` is what a host calls before a tool runs; the rest are the routes.
import { type ListQuery, routes } from './api.js';
import { type GateOptions, type GateResult, gate } from './gate.js';
import { createTransport, type TransportOptions } from './http.js';
import { createRunLog } from './runs.js';
import { type ApprovalStore, memoryStore } from './store.js';
import type { Approval, ApprovalPage, DecisionBody, ToolCall, ToolsResponse } from './types.js';

export type { ListQuery } from './api.js';
export type { GateOptions, GateResult, PendingApproval } from './gate.js';
export { GatehouseError } from './http.js';
export { type ApprovalStore, fileStore, memoryStore } from './store.js';
export type * from './types.js';

export interface ClientOptions extends TransportOptions {
  /** Where gate() keeps the approvals it filed: memoryStore() by default; fileStore(dir) survives a restart. */
  store?: ApprovalStore;
}

export interface GatehouseClient {
  /** POST /decide: the decision body (allow, deny, abort, require_approval); throws GatehouseError otherwise. */
  decide(call: ToolCall): Promise<DecisionBody>;
  /** The final word on a call: `allow` means run it now. Never throws for a decision; fails closed. */
  gate(call: ToolCall, options?: GateOptions): Promise<GateResult>;
  /** GET /tools: what the caller may use. */
  tools(): Promise<ToolsResponse>;
  approvals: {
    get(id: string, options?: { waitSeconds?: number; signal?: AbortSignal }): Promise<Approval>;
    list(query?: ListQuery): Promise<ApprovalPage>;
    grant(id: string, note?: string): Promise<Approval>;
    deny(id: string, reason?: string): Promise<Approval>;
    cancel(id: string): Promise<Approval>;
  };
}

export function createClient(options: ClientOptions): GatehouseClient {
  const api = routes(createTransport(options));
  const deps = { routes: api, store: options.store ?? memoryStore(), runs: createRunLog() };
  return {
    decide: (call) => api.decide(call),
    gate: (call, o) => gate(deps, call, o),
    tools: () => api.tools(),
    approvals: {
      get: (id, o = {}) => api.approval(id, o.waitSeconds, o.signal),
      list: (q) => api.list(q),
      grant: (id, note) => api.grant(id, note),
      deny: (id, reason) => api.deny(id, reason),
      cancel: (id) => api.cancel(id),
    },
  };
}
