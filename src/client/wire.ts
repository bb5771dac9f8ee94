// The one place where the client's camelCase names meet the wire's snake_case ones (docs/client.md,
// "Names"). Each shape the client sends or reads is described once below, by its wire names; a value
// is converted by walking its description, so only the names listed are renamed and the data inside
// `args`, `context`, `capability` and `presentation` (the caller's and the policy's own keys, such
// as `project_dir`) passes untouched. A name the description does not list is not read: the types
// (./types.ts) promise nothing they do not know.
//
// Each description is checked twice: `satisfies ShapeOf<T>` makes the compiler hold its names and
// their optionality to the TypeScript type, and test/client/contract.test.ts holds them to the
// schema of openapi.yaml, so the types, the conversion and the document cannot drift apart.
import type {
  ApprovalFiling,
  Approval,
  ApprovalDescriptor,
  ApprovalPage,
  ApprovalRequirement,
  ApprovalRequirementState,
  ApprovalSummary,
  BudgetsQuery,
  BudgetsResponse,
  CounterOwner,
  DecideCall,
  DecisionBody,
  DecisionPage,
  DecisionQuery,
  DecisionRecord,
  DenyTexts,
  Grant,
  GrantTexts,
  InspectBody,
  InspectFinding,
  LimitCounter,
  LimitEntry,
  LimitStanding,
  ListQuery,
  MoneyField,
  NextStep,
  PolicyIdentity,
  Requester,
  RunApproval,
  RunStep,
  RunView,
  ToolCall,
  ToolEntry,
  ToolsResponse,
} from './types.js';

/** One field of a shape: whether the wire may leave it out, and the shape of a nested object (or of each item of a list). */
export interface Field {
  readonly optional: boolean;
  readonly shape?: Shape;
  readonly list?: true;
}

export type Shape = { readonly [wireName: string]: Field };

/** `decisionNote` → `decision_note`, as a type. */
type Snake<S extends string> = S extends `${infer Head}${infer Tail}`
  ? `${Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`}${Snake<Tail>}`
  : S;

/** A shape that names exactly the fields of `T`, in wire case, optional exactly where `T`'s are. */
export type ShapeOf<T> = {
  readonly [K in keyof T & string as Snake<K>]-?: Record<never, never> extends Pick<T, K>
    ? Field & { optional: true }
    : Field & { optional: false };
};

/** `decision_note` → `decisionNote`. */
export const camelName = (wire: string): string => wire.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

const one = { optional: false } as const;
const maybe = { optional: true } as const;
const nested = <S extends Shape>(shape: S) => ({ optional: false, shape }) as const;
const maybeNested = <S extends Shape>(shape: S) => ({ optional: true, shape }) as const;
const listOf = <S extends Shape>(shape: S) => ({ optional: false, shape, list: true }) as const;
const maybeListOf = <S extends Shape>(shape: S) => ({ optional: true, shape, list: true }) as const;

// ---- what the client sends ------------------------------------------------------------------------

export const RUN_STEP = { tool: one, decision: maybe, approval_id: maybe } as const satisfies ShapeOf<RunStep>;
export const RUN_APPROVAL = {
  id: one,
  kind: maybe,
  status: maybe,
  tool: maybe,
} as const satisfies ShapeOf<RunApproval>;
export const RUN_VIEW = {
  id: maybe,
  steps: maybeListOf(RUN_STEP),
  approvals: maybeListOf(RUN_APPROVAL),
} as const satisfies ShapeOf<RunView>;
/** A tool call (the body of POST /approvals below, and of /explain). */
export const TOOL_CALL = {
  tool: one,
  args: maybe,
  run: maybeNested(RUN_VIEW),
  context: maybe,
} as const satisfies ShapeOf<ToolCall>;
/** The body of POST /approvals: a call, and the runtime's own kind when it files one. */
export const APPROVAL_FILING = {
  ...TOOL_CALL,
  kind: maybe,
  stage: maybe,
  result: maybe,
} as const satisfies ShapeOf<ApprovalFiling>;
/** The body of POST /decide. */
export const DECIDE_REQUEST = { ...TOOL_CALL, approval_id: maybe } as const satisfies ShapeOf<DecideCall>;
/**
 * The body of POST /inspect, every stage's fields in one description (`stage` says which are sent):
 * `result` and `content` are data, never renamed.
 */
export const INSPECT_REQUEST = {
  stage: one,
  tool: maybe,
  args: maybe,
  result: maybe,
  content: maybe,
  run: maybeNested(RUN_VIEW),
  context: maybe,
  approval_id: maybe,
} as const satisfies ShapeOf<InspectFields>;
export const GRANT_REQUEST = { note: maybe, args: maybe } as const satisfies ShapeOf<GrantTexts>;
/** The deny body; the server's `reason` (one text for both, kept for older callers) is not sent. */
export const DENY_REQUEST = { note: maybe, message: maybe } as const satisfies ShapeOf<DenyTexts>;
/** The query of GET /approvals. */
export const LIST_QUERY = {
  status: maybe,
  tool: maybe,
  kind: maybe,
  requester: maybe,
  q: maybe,
  decided: maybe,
  eligible: maybe,
  order: maybe,
  count: maybe,
  limit: maybe,
  cursor: maybe,
} as const satisfies ShapeOf<ListQuery>;

// ---- what the client reads ------------------------------------------------------------------------

export const POLICY_IDENTITY = { policy: one, version: maybe, digest: one } as const satisfies ShapeOf<PolicyIdentity>;
export const LIMIT_COUNTER = {
  counted: maybe,
  calls: maybe,
  window_start: one,
  window_end: one,
  frees_at: maybe,
} as const satisfies ShapeOf<LimitCounter>;
export const APPROVAL_REQUIREMENT = {
  policy: one,
  rule: one,
  kind: one,
  reason: one,
  capability: one,
  presentation: one,
  standing: maybeNested(LIMIT_COUNTER),
  approvers: maybe,
  quorum: maybe,
  separate_from_requester: maybe,
} as const satisfies ShapeOf<ApprovalRequirement>;
export const APPROVAL_REQUIREMENT_STATE = {
  ...APPROVAL_REQUIREMENT,
  approvers: one,
  quorum: one,
  separate_from_requester: one,
  granted: one,
} as const satisfies ShapeOf<ApprovalRequirementState>;
export const GRANT = { by: one, name: one, at: one, note: one } as const satisfies ShapeOf<Grant>;
export const APPROVAL_DESCRIPTOR = {
  requirements: listOf(APPROVAL_REQUIREMENT),
  kind: one,
  capability: one,
  presentation: one,
  hash: one,
  id: maybe,
  status: maybe,
} as const satisfies ShapeOf<ApprovalDescriptor>;
export const NEXT_STEP = {
  action: one,
  url: one,
  expires_at: maybe,
  approval_id: maybe,
  args: maybe,
} as const satisfies ShapeOf<NextStep>;
/** A decision: POST /decide (200 and 403) and the 409 of POST /approvals. */
export const DECISION = {
  decision: one,
  reason: one,
  rule: one,
  policies: listOf(POLICY_IDENTITY),
  approval: maybeNested(APPROVAL_DESCRIPTOR),
  message: one,
  decision_id: one,
  next: maybeNested(NEXT_STEP),
} as const satisfies ShapeOf<DecisionBody>;
export const INSPECT_FINDING = {
  guard: one,
  type: one,
  path: one,
  in_key: maybe,
} as const satisfies ShapeOf<InspectFinding>;
/** The answer of POST /inspect (200 and 403); `redacted` is data, never renamed. */
export const INSPECT_ANSWER = {
  decision: one,
  stage: one,
  reason: one,
  rule: one,
  policies: listOf(POLICY_IDENTITY),
  message: one,
  decision_id: one,
  redacted: maybe,
  findings: maybeListOf(INSPECT_FINDING),
  approval: maybeNested(APPROVAL_DESCRIPTOR),
  next: maybeNested(NEXT_STEP),
} as const satisfies ShapeOf<InspectBody>;
export const REQUESTER = { sub: one, team: one, agent: one, name: one } as const satisfies ShapeOf<Requester>;
export const MONEY_FIELD = { path: one, currency: maybe, currency_path: maybe } as const satisfies ShapeOf<MoneyField>;
export const APPROVAL_SUMMARY = {
  id: one,
  status: one,
  kind: one,
  hash: one,
  tool: one,
  reason: one,
  rule: one,
  requester: nested(REQUESTER),
  run_id: one,
  created_at: one,
  expires_at: one,
  decided_by: one,
  decided_at: one,
  decision_note: one,
  decision_message: one,
  consumed_at: one,
  args_bytes: one,
  amended_by: one,
  amended_at: one,
} as const satisfies ShapeOf<ApprovalSummary>;
export const APPROVAL = {
  ...APPROVAL_SUMMARY,
  args: one,
  context: maybe,
  capability: one,
  presentation: one,
  requirements: listOf(APPROVAL_REQUIREMENT_STATE),
  grants: listOf(GRANT),
  policies: listOf(POLICY_IDENTITY),
  presentation_label: one,
  result: maybe,
  result_label: maybe,
  money: maybeListOf(MONEY_FIELD),
  args_schema: maybe,
  amended_args: one,
  amended_hash: one,
} as const satisfies ShapeOf<Approval>;
export const APPROVAL_PAGE = {
  items: listOf(APPROVAL_SUMMARY),
  next_cursor: one,
  count: maybe,
} as const satisfies ShapeOf<ApprovalPage>;
export const TOOL_ENTRY = {
  name: one,
  policy: one,
  kind: one,
  tags: one,
  status: one,
  rules: one,
} as const satisfies ShapeOf<ToolEntry>;
export const TOOLS_RESPONSE = { env: one, tools: listOf(TOOL_ENTRY) } as const satisfies ShapeOf<ToolsResponse>;

/** Every field any stage's /inspect body has, each optional but the stage (what INSPECT_REQUEST describes). */
interface InspectFields {
  stage: string;
  tool?: string;
  args?: Record<string, unknown>;
  result?: unknown;
  content?: unknown;
  run?: ToolCall['run'];
  context?: Record<string, unknown>;
  approvalId?: string;
}

// ---- the conversion -------------------------------------------------------------------------------

/** A wire value in the client's names. The caller has checked what it relies on; the rest is taken as sent. */
export function fromWire<T>(shape: Shape, value: unknown): T {
  return convert(shape, value, (wire) => [wire, camelName(wire)]) as T;
}

/** A value of the client's in wire names, fields left `undefined` left out. */
export function toWire(shape: Shape, value: object): Record<string, unknown> {
  return convert(shape, value, (wire) => [camelName(wire), wire]) as Record<string, unknown>;
}

function convert(shape: Shape, value: unknown, names: (wire: string) => [from: string, to: string]): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const source = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [wire, field] of Object.entries(shape)) {
    const [from, to] = names(wire);
    if (!Object.hasOwn(source, from) || source[from] === undefined) continue;
    const v = source[from];
    const inner = field.shape;
    out[to] =
      inner === undefined
        ? v
        : field.list && Array.isArray(v)
          ? v.map((item) => convert(inner, item, names))
          : convert(inner, v, names);
  }
  return out;
}

/** A query string of the wire names (`?a=1&b=true`), or '' when no option is set. */
export function queryOf(shape: Shape, options: object): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(toWire(shape, options))) query.set(name, String(value));
  const text = query.toString();
  return text === '' ? '' : `?${text}`;
}

/** The operator's message for the agent in a `recently_denied` problem (its `approval`, a summary), when there is one. */
export function deniedMessageOf(problem: unknown): string | undefined {
  const approval = (problem as { approval?: unknown } | undefined)?.approval;
  if (approval === null || typeof approval !== 'object') return undefined;
  const message = fromWire<Partial<ApprovalSummary>>(APPROVAL_SUMMARY, approval).decisionMessage;
  return typeof message === 'string' ? message : undefined;
}

// ---- the lists of decisions and of budgets ------------------------------------------------------------

/** The query of GET /decisions. */
export const DECISION_QUERY = {
  tool: maybe,
  decision: maybe,
  user: maybe,
  since: maybe,
  until: maybe,
  limit: maybe,
  cursor: maybe,
} as const satisfies ShapeOf<DecisionQuery>;
export const DECISION_RECORD = {
  decision_id: one,
  time: one,
  tool: one,
  decision: one,
  rule: one,
  kind: maybe,
  policies: one,
  user: one,
  team: one,
  agent: one,
  roles: one,
  env: one,
  run_id: one,
  approval_id: maybe,
  replayed: maybe,
  args: maybe,
  claims: maybe,
  context: maybe,
  run: maybe,
} as const satisfies ShapeOf<DecisionRecord>;
export const DECISION_PAGE = {
  items: listOf(DECISION_RECORD),
  next_cursor: one,
} as const satisfies ShapeOf<DecisionPage>;
/** The query of GET /budgets. */
export const BUDGETS_QUERY = { limit: maybe } as const satisfies ShapeOf<BudgetsQuery>;
export const COUNTER_OWNER = {
  user: maybe,
  team: maybe,
  agent: maybe,
  run: maybe,
} as const satisfies ShapeOf<CounterOwner>;
export const LIMIT_STANDING = {
  ...LIMIT_COUNTER,
  for: nested(COUNTER_OWNER),
} as const satisfies ShapeOf<LimitStanding>;
export const LIMIT_ENTRY = {
  id: one,
  type: one,
  policy: one,
  scope: one,
  on_exceed: one,
  counts: maybe,
  sum: maybe,
  max: maybe,
  max_usd: maybe,
  calls: maybe,
  per: one,
  tools: maybe,
  kinds: maybe,
  tags: maybe,
  envs: maybe,
  counters: listOf(LIMIT_STANDING),
  countable: maybe,
  more: maybe,
} as const satisfies ShapeOf<LimitEntry>;
export const BUDGETS_RESPONSE = { env: one, limits: listOf(LIMIT_ENTRY) } as const satisfies ShapeOf<BudgetsResponse>;
