// `gatehouse-pdp/client`: the TypeScript client every adapter is built on (docs/client.md). It needs nothing
// beyond Node's fetch. `gate()` is what a host calls before a tool runs; the rest are the routes. Every
// method takes its options last, a RequestOptions (`signal`, `timeoutMs`) or one that extends it.
import { type Filing, type GetApprovalOptions, routes } from './api.js';
import { type GateOptions, type GateResult, gate } from './gate.js';
import { type GuardOptions, type GuardResult, guardResult, type ToolResult } from './guard.js';
import { createTransport, type TransportOptions } from './http.js';
import { listRoutes } from './lists.js';
import { type ApprovalMemory, processMemory } from './memory.js';
import { createRunLog } from './runs.js';
import type {
  Approval,
  ApprovalPage,
  BudgetsQuery,
  BudgetsResponse,
  DecideCall,
  DecisionBody,
  DecisionPage,
  DecisionQuery,
  DenyTexts,
  GrantTexts,
  IdempotentOptions,
  InspectBody,
  InspectRequest,
  ListQuery,
  ApprovalFiling,
  RequestOptions,
  ToolCall,
  ToolsResponse,
} from './types.js';

export type { Filing, GetApprovalOptions } from './api.js';
export type { GateOptions, GateResult, PendingApproval } from './gate.js';
export { type Amended, amendedNote, changedPaths } from './amended.js';
export type { GuardOptions, GuardResult, ToolResult } from './guard.js';
export { GatehouseError } from './http.js';
export { type ApprovalMemory, fileMemory, processMemory } from './memory.js';
export type * from './types.js';

export interface ClientOptions extends TransportOptions {
  /** Where gate() remembers the approvals it filed: processMemory() by default; fileMemory(dir) survives a restart. */
  memory?: ApprovalMemory;
}

export interface GatehouseClient {
  /** POST /decide: the decision body (allow, deny, abort, require_approval); throws GatehouseError otherwise. */
  decide(call: DecideCall, options?: IdempotentOptions): Promise<DecisionBody>;
  /** The final word on a call: `allow` means run it now. Never throws for a decision; fails closed. */
  gate(call: ToolCall, options?: GateOptions): Promise<GateResult>;
  /** POST /inspect: what the guards say of a tool's result or a model's text; throws GatehouseError for anything but a decision. */
  inspect(request: InspectRequest, options?: RequestOptions): Promise<InspectBody>;
  /**
   * What the model may see of a tool's result: `allow` with `output` (the result, or redacted), or
   * withheld with a message; a review an operator must make is filed and waited for. Never throws; fails closed.
   */
  guardResult(result: ToolResult, options?: GuardOptions): Promise<GuardResult>;
  /** GET /tools: what the caller may use. */
  tools(options?: RequestOptions): Promise<ToolsResponse>;
  /** GET /decisions: a page of the decision store's records, newest first, filtered (auditors and admins). */
  decisions(query?: DecisionQuery, options?: RequestOptions): Promise<DecisionPage>;
  /** GET /budgets: the caller's budgets and rate limits with their counters (an admin: everyone's). */
  budgets(query?: BudgetsQuery, options?: RequestOptions): Promise<BudgetsResponse>;
  approvals: {
    /**
     * POST /approvals: the approval filed or found, or (409) the decision of a call that needs none.
     * With `stage: 'result'` and `result`, the review of a tool's result.
     */
    file(call: ApprovalFiling, options?: IdempotentOptions): Promise<Filing>;
    /** GET /approvals/{id}, held up to `waitSeconds` (0–60) while it is pending. */
    get(id: string, options?: GetApprovalOptions): Promise<Approval>;
    /** GET /approvals: a page of summaries, filtered. */
    list(query?: ListQuery, options?: RequestOptions): Promise<ApprovalPage>;
    grant(id: string, texts?: GrantTexts, options?: RequestOptions): Promise<Approval>;
    /** `note` for the record (approvers only), `message` for the agent. */
    deny(id: string, texts?: DenyTexts, options?: RequestOptions): Promise<Approval>;
    cancel(id: string, options?: RequestOptions): Promise<Approval>;
  };
}

export function createClient(options: ClientOptions): GatehouseClient {
  const transport = createTransport(options);
  const api = routes(transport);
  const lists = listRoutes(transport);
  const deps = { routes: api, memory: options.memory ?? processMemory(), runs: createRunLog() };
  return {
    decide: (call, o) => api.decide(call, o),
    gate: (call, o) => gate(deps, call, o),
    inspect: (request, o) => api.inspect(request, o),
    guardResult: (result, o) => guardResult(api, result, o),
    tools: (o) => api.tools(o),
    decisions: (q, o) => lists.decisions(q, o),
    budgets: (q, o) => lists.budgets(q, o),
    approvals: {
      file: (call, o) => api.file(call, o),
      get: (id, o) => api.approval(id, o),
      list: (q, o) => api.list(q, o),
      grant: (id, texts, o) => api.grant(id, texts, o),
      deny: (id, texts, o) => api.deny(id, texts, o),
      cancel: (id, o) => api.cancel(id, o),
    },
  };
}
