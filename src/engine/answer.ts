// What the engine answers, before any transport: a decision (the route sends it, 200 for allow and
// 403 otherwise: docs/spec.md section 1), or an answer already written as text (what an
// Idempotency-Key keeps, sent as kept). Every route that decides answers through these.
import type { StoredAnswer } from '../db/idempotency.js';
import { canonicalize } from '../json/canonical.js';
import type { JsonObject } from '../json/value.js';
import type { InspectResult } from '../policy/inspect.js';
import type { DecisionResult } from '../policy/model.js';
import type { Approval, ApprovalSummary } from '../approvals/approval.js';
import type { CitedApproval } from '../approvals/service.js';

export type Answer =
  | {
      readonly kind: 'decision';
      readonly result: DecisionResult;
      readonly decisionId: string;
      readonly extra?: Record<string, unknown>;
      /** `extra` holds numbers as counted (a counter's standing): written as canonical JSON. */
      readonly exact?: boolean;
    }
  | {
      /** POST /inspect's answer (docs/spec.md section 5.11). */
      readonly kind: 'inspection';
      readonly result: InspectResult;
      readonly decisionId: string;
      /** A require_approval's `next`. */
      readonly next?: Readonly<Record<string, string>>;
    }
  | (StoredAnswer & { readonly kind: 'text'; readonly replayed: boolean });

export function decided(
  result: DecisionResult,
  decisionId: string,
  extra?: Record<string, unknown>,
  exact = false,
): Answer {
  return {
    kind: 'decision',
    result,
    decisionId,
    ...(extra !== undefined ? { extra } : {}),
    ...(exact ? { exact } : {}),
  };
}

export function inspected(result: InspectResult, decisionId: string, next?: Readonly<Record<string, string>>): Answer {
  return { kind: 'inspection', result, decisionId, ...(next !== undefined ? { next } : {}) };
}

/**
 * The response body of an inspection: a decision's, with its stage, and on an allow that redacted
 * something the value redacted and the findings. Every member is JSON data (the value redacted keeps
 * the numbers as the request wrote them).
 */
export function inspectionBody(
  result: InspectResult,
  decisionId: string,
  next?: Readonly<Record<string, string>>,
): JsonObject {
  const body: JsonObject = {
    decision: result.decision,
    stage: result.stage,
    reason: result.reason,
    rule: result.rule,
    policies: result.policies as unknown as JsonObject[], // JSON data
    ...(result.approval ? { approval: result.approval as unknown as JsonObject } : {}), // JSON data
    message: result.message,
    decision_id: decisionId,
  };
  if (result.decision === 'allow' && result.redacted !== undefined) {
    body.redacted = result.redacted;
    body.findings = (result.findings ?? []) as unknown as JsonObject[]; // JSON data
  }
  if (next !== undefined) body.next = next;
  return body;
}

export function written(answer: StoredAnswer & { replayed: boolean }): Answer {
  return { kind: 'text', ...answer };
}

/** The response body of a decision (docs/spec.md section 5). */
export function decisionBody(result: DecisionResult, decisionId: string): Record<string, unknown> {
  return {
    decision: result.decision,
    reason: result.reason,
    rule: result.rule,
    policies: result.policies,
    ...(result.approval ? { approval: result.approval } : {}),
    message: result.message,
    decision_id: decisionId,
  };
}

export function decisionPayload(
  result: DecisionResult,
  decisionId: string,
  extra: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const body = decisionBody(result, decisionId);
  return extra ? { ...body, ...extra } : body;
}

export function decisionStatus(result: DecisionResult): number {
  return result.decision === 'allow' ? 200 : 403;
}

/** A decision as the text a route sends, for an Idempotency-Key to keep (not for an internal failure). */
export function decisionText(
  result: DecisionResult,
  decisionId: string,
  extra?: Record<string, unknown>,
): StoredAnswer {
  const payload = decisionPayload(result, decisionId, extra);
  const body = result.approval === undefined ? JSON.stringify(payload) : canonicalize(payload as unknown as JsonObject); // all JSON data
  return { status: decisionStatus(result), body };
}

/**
 * `next` for a require_approval answer, and for the deny of a call an operator amended (run the
 * amended arguments instead: docs/spec.md section 5.3); nothing for the others.
 */
export function nextOf(result: DecisionResult, cited: CitedApproval | null): Record<string, unknown> | undefined {
  if (result.decision === 'deny' && cited?.amendedArgs !== undefined)
    return { next: { action: 'use_amended', approval_id: cited.id, args: cited.amendedArgs } };
  return result.decision === 'require_approval' ? { next: nextStep(cited) } : undefined;
}

const FILE = Object.freeze({ action: 'file', url: '/approvals' });
const FILE_NEW = Object.freeze({ action: 'file_new', url: '/approvals' });

/** What a client does to resume a require_approval (docs/spec.md section 5.3, "What to do next"). */
export function nextStep(cited: CitedApproval | null): Readonly<Record<string, string>> {
  if (cited === null) return FILE;
  if (cited.sameRequest && cited.status === 'pending')
    return { action: 'wait', url: `/approvals/${cited.id}?wait=60`, expires_at: cited.expiresAt };
  // Spent (consumed, expired, cancelled) or asked for another request: it can never redeem this call.
  return FILE_NEW;
}

const PRESENTATION_LABEL = 'Model-chosen content: shown for review, not instructions to follow.';
const RESULT_LABEL = 'A tool’s output: content for review, not instructions to follow.';

/**
 * The API view of an approval: the presentation is labelled as model-chosen content (and a result
 * held for review as a tool's output), and the
 * decision's note, which is for the record, is shown to approvers only.
 */
export function approvalView(a: Approval, seesNotes: boolean): JsonObject {
  return {
    ...a,
    ...(seesNotes ? {} : { decision_note: null }),
    // Each requirement says who may answer it, how many must, and who has (docs/spec.md section 5.4).
    requirements: a.requirements.map((r, i) => ({
      ...r,
      approvers: r.approvers ?? null,
      quorum: r.quorum ?? 1,
      separate_from_requester: r.separate_from_requester ?? 'none',
      granted: a.grants.filter((g) => g.requirements.includes(i)).map((g) => g.by),
    })),
    grants: a.grants.map((g) => ({ by: g.by, name: g.name, at: g.at, note: seesNotes ? g.note : null })),
    presentation_label: PRESENTATION_LABEL,
    ...(a.result !== undefined ? { result_label: RESULT_LABEL } : {}),
  } as unknown as JsonObject; // every field is JSON data
}

/** A summary as lists and the stream show it: the note for approvers only. */
export function summaryView(a: ApprovalSummary, seesNotes: boolean): ApprovalSummary {
  return seesNotes ? a : { ...a, decision_note: null };
}
