// What gate() keeps in the client's approval memory for a call, and the checks it passes before it is
// used. A fileMemory is a directory anyone with the user's rights can write, so an entry read back is not
// trusted: it is used only when it is one gate() could have written for this very call (the same
// tool, canonical arguments and context, the same run, the redeem citing the entry's approval), and
// an answer to its redeem allows only when Gatehouse consumed that approval for this call's hash.
// Anything else is discarded and the call decided afresh (docs/client.md, "What the memory gives back is checked").
import { canonicalize } from '../json/canonical.js';
import { parseJson } from '../json/parse.js';
import type { JsonValue } from '../json/value.js';
import type { DecisionBody, ToolCall } from './types.js';
import { DECIDE_REQUEST, toWire } from './wire.js';

/** The approval filed for a call, and the redeem that was sent for it (its exact body and Idempotency-Key). */
export interface Entry {
  id: string;
  redeem?: { key: string; body: string };
}

/** The redeem body of a call, as the wire has it: the call as sent, citing the approval. */
export function redeemBody(call: ToolCall, approvalId: string): string {
  return JSON.stringify(toWire(DECIDE_REQUEST, { ...call, approvalId }));
}

/**
 * The entry in `text`, when it is one for `call` (as sent, with its run); undefined when it is not.
 * `amendedArgs`: the arguments Gatehouse says an operator amended this call's approval to (read from
 * Gatehouse, never from the memory); a stored redeem of the call with those arguments is this call's too.
 */
export function entryFor(text: string, call: ToolCall, amendedArgs?: Record<string, unknown>): Entry | undefined {
  const value = strictParse(text);
  if (!isRecord(value) || !hasOnly(value, ['id', 'redeem'])) return undefined;
  const { id, redeem } = value;
  // An approval id as /decide takes it (docs/spec.md section 5.3: 1–64 characters).
  if (typeof id !== 'string' || id.length < 1 || id.length > 64) return undefined;
  if (redeem === undefined) return { id };
  if (!isRecord(redeem) || !hasOnly(redeem, ['key', 'body'])) return undefined;
  const { key, body } = redeem;
  if (typeof key !== 'string' || typeof body !== 'string') return undefined;
  const of = (c: ToolCall): boolean => isRedeemOf(body, c, id);
  if (!of(call) && !(amendedArgs !== undefined && of({ ...call, args: amendedArgs }))) return undefined;
  return { id, redeem: { key, body } };
}

/** The approval id an entry names, whatever else it holds (to ask Gatehouse about it). */
export function entryIdOf(text: string): string | undefined {
  const value = strictParse(text);
  if (!isRecord(value)) return undefined;
  const { id } = value;
  return typeof id === 'string' && id.length >= 1 && id.length <= 64 ? id : undefined;
}

/** Whether a stored redeem body sends exactly `args` (compared in canonical form). */
export function redeemSends(body: string, args: Record<string, unknown>): boolean {
  const sent = strictParse(body);
  if (!isRecord(sent)) return false;
  return sameJson(sent.args === undefined ? {} : sent.args, args);
}

/**
 * Whether `body` redeems approval `id` for exactly `call`: read with the service's own strict parser
 * (no duplicate key can mean one thing here and another there), nothing but the fields of a call,
 * the same tool, the same arguments and context in canonical form, the same run id. The run's steps
 * are the host's record when it was sent and may differ since; the answer's check covers them.
 */
function isRedeemOf(body: string, call: ToolCall, id: string): boolean {
  const sent = strictParse(body);
  if (!isRecord(sent) || !hasOnly(sent, ['tool', 'args', 'context', 'run', 'approval_id'])) return false;
  if (sent.approval_id !== id || sent.tool !== call.tool) return false;
  if (sent.run !== undefined && !isRecord(sent.run)) return false;
  if (sent.run?.id !== call.run?.id) return false;
  return (
    sameJson(sent.args === undefined ? {} : sent.args, call.args ?? {}) &&
    sameJson(sent.context === undefined ? {} : sent.context, call.context ?? {})
  );
}

/**
 * Whether a redeem's `allow` is Gatehouse's consent for this call: it consumed the entry's approval,
 * and for the hash Gatehouse gave this call when it decided it afresh (which covers the tool, the
 * arguments, the context and what the policy asked for). An allow that says anything else is not an
 * answer about this call's approval (docs/spec.md section 5.3, "With approval_id").
 */
export function isConsentFor(answer: DecisionBody, approvalId: string, fresh: DecisionBody): boolean {
  const hash = fresh.approval?.hash;
  return (
    answer.decision === 'allow' &&
    answer.approval?.id === approvalId &&
    answer.approval.status === 'consumed' &&
    typeof hash === 'string' &&
    hash !== '' &&
    answer.approval.hash === hash
  );
}

/** Canonical equality (docs/spec.md section 4.2) of a stored value and one of the call, as the call is sent (JSON). */
function sameJson(stored: JsonValue, ours: unknown): boolean {
  try {
    return canonicalize(stored) === canonicalize(JSON.parse(JSON.stringify(ours)) as JsonValue);
  } catch {
    return false; // not canonical JSON on either side: not the same call
  }
}

function strictParse(text: string): JsonValue | undefined {
  try {
    return parseJson(text);
  } catch {
    return undefined;
  }
}

function isRecord(v: unknown): v is Record<string, JsonValue> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function hasOnly(o: Record<string, unknown>, keys: readonly string[]): boolean {
  return Object.keys(o).every((k) => keys.includes(k));
}
