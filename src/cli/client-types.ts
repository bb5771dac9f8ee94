// TEMPORARY: the part of the client interface (src/client/, being written on main) that the MCP proxy
// and the hook use, as the brief states it. Replaced by imports from ../client/index.js after merging main.

export type DecisionKind = 'allow' | 'deny' | 'abort' | 'require_approval';
export type ApprovalStatus = 'pending' | 'granted' | 'denied' | 'expired' | 'consumed' | 'cancelled';
export type ToolStatus = 'allow' | 'require_approval' | 'deny' | 'abort' | 'depends';

export interface ToolCall {
  tool: string;
  args?: Record<string, unknown>;
  context?: Record<string, unknown>;
}

export interface PendingApproval {
  id: string;
  status: ApprovalStatus;
  expiresAt: string | null;
  url: string;
  message: string;
}

export interface GateOptions {
  runId?: string;
  signal?: AbortSignal;
  onPending?: (p: PendingApproval) => void;
  maxWaitMs?: number;
}

export interface GateResult {
  decision: DecisionKind;
  message: string;
  reason: string;
  approval?: { id: string; status: ApprovalStatus; expiresAt: string | null };
  error?: { code: string; detail: string };
}

export interface ToolsResponse {
  env: string;
  tools: { name: string; policy: string; kind: string | null; tags: string[]; status: ToolStatus; rules: string[] }[];
}

export interface GatehouseClient {
  gate(call: ToolCall, options?: GateOptions): Promise<GateResult>;
  tools(): Promise<ToolsResponse>;
}
