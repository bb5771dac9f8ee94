// What the client sends and reads: the wire shapes of docs/spec.md section 5 (openapi.yaml is the full
// schema). Only the fields a client acts on are typed closely; the rest pass through as read.

export type DecisionKind = 'allow' | 'deny' | 'abort' | 'require_approval';
export type ApprovalStatus = 'pending' | 'granted' | 'denied' | 'expired' | 'consumed' | 'cancelled';

export interface RunStep {
  tool: string;
  decision?: DecisionKind;
  approval_id?: string;
}

/** The run view the host's runtime records (spec 5.3): the host's word, never the model's. */
export interface RunView {
  id?: string;
  steps?: RunStep[];
  approvals?: { id: string; kind?: string; status?: ApprovalStatus }[];
}

/** A tool call as the tool will execute it: parsed arguments, never the model's raw JSON text. */
export interface ToolCall {
  tool: string;
  args?: Record<string, unknown>;
  context?: Record<string, unknown>;
  run?: RunView;
}

export interface NextStep {
  action: 'file' | 'wait' | 'file_new';
  url: string;
  expires_at?: string;
}

export interface DecisionBody {
  decision: DecisionKind;
  reason: string;
  rule: string | null;
  message: string;
  decision_id: string;
  policies: { policy: string; version: string; digest: string }[];
  approval?: { id?: string; status?: ApprovalStatus; kind: string; hash: string; [field: string]: unknown };
  next?: NextStep;
  [field: string]: unknown;
}

export interface Approval {
  id: string;
  status: ApprovalStatus;
  kind: string;
  hash: string;
  tool: string;
  reason: string;
  rule: string;
  requester: { sub: string; team: string | null; agent: string | null };
  run_id: string | null;
  created_at: string;
  expires_at: string;
  decided_by: string | null;
  decided_at: string | null;
  /** For the record: shown to approvers only (null for anyone else). */
  decision_note: string | null;
  /** A denial's message for the agent. */
  decision_message: string | null;
  consumed_at: string | null;
  /** On GET /approvals/{id} and the transitions, not on list summaries. */
  args?: Record<string, unknown>;
  [field: string]: unknown;
}

export interface ApprovalPage {
  items: Approval[];
  next_cursor: string | null;
}

export type ToolStatus = 'allow' | 'require_approval' | 'deny' | 'abort' | 'depends';

/** GET /tools: every catalogued tool (exact names and globs) and what the caller would get. */
export interface ToolsResponse {
  /** The active environment (POLICY_ENV), or null when none is set. */
  env: string | null;
  tools: { name: string; policy: string; kind: string | null; tags: string[]; status: ToolStatus; rules: string[] }[];
}
