// The text the model reads (docs/spec.md section 5). It names the tool and the policy's reason, never an
// argument value, and tells the model what to do next.
import type { Decision } from './model.js';

export function modelMessage(decision: Decision, tool: string, why: string, schemaRefused: boolean): string {
  const action = `The ${JSON.stringify(tool)} action`;
  const reason = trimEnd(why);
  switch (decision) {
    case 'allow':
      return `${action} is allowed by policy.`;
    case 'deny':
      return `${action} was not approved by policy. Reason: ${reason}. ${
        schemaRefused
          ? 'Correct the arguments and try again.'
          : 'Tell the user it was declined; do not retry it unchanged.'
      }`;
    case 'abort':
      return `${action} crossed a hard limit of this run (${reason}). Stop the run now and tell the user why; do not try to work around it.`;
    case 'require_approval':
      return `${action} needs an operator's approval (${reason}). Wait for the approval, then try again. Do not change the call while you wait.`;
  }
}

/**
 * require_approval when the approval cited is of this very call but can never be redeemed again
 * (consumed: single use; expired): waiting cannot help, a new approval is needed (docs/spec.md section 5.3).
 */
export function spentApprovalMessage(tool: string, why: string, status: 'consumed' | 'expired' | 'cancelled'): string {
  const spent =
    status === 'consumed' ? 'has already been used' : status === 'expired' ? 'has expired' : 'was withdrawn';
  return `The ${JSON.stringify(tool)} action needs an operator's approval (${trimEnd(why)}). The approval you cited ${spent} and cannot be used again: a new approval is needed. Request one, then try again; waiting for the old one will not help.`;
}

/** A result held for review whose cited approval was of this very result but can never be redeemed again. */
export function spentReviewMessage(tool: string, why: string, status: 'consumed' | 'expired' | 'cancelled'): string {
  const spent =
    status === 'consumed' ? 'has already been used' : status === 'expired' ? 'has expired' : 'was withdrawn';
  return `The output of the ${JSON.stringify(tool)} action is held for an operator's review (${trimEnd(why)}). The approval you cited ${spent} and cannot be used again: a new review is needed. Request one; waiting for the old one will not help.`;
}

// Drops trailing dots and whitespace so the reason fits the sentence around it. A loop, not
// `/[.\s]+$/`: that RegExp is quadratic on a long run of spaces followed by another character, and
// reasons carry request-derived text (a schema error's instance path, a guard finding's path).
function trimEnd(why: string): string {
  let end = why.length;
  while (end > 0 && TRAILING.test(why[end - 1]!)) end--;
  return why.slice(0, end);
}

const TRAILING = /^[.\s]$/;

/**
 * The text the model reads about what a guard did to a tool's result or a model's request or
 * response (docs/spec.md section 2.5): what was withheld and why (the guard and the path, never the value).
 */
export function inspectMessage(
  decision: 'allow' | 'deny' | 'require_approval',
  what: { stage: 'result'; tool: string } | { stage: 'llm_request' | 'llm_response' },
  why: string,
  redacted: boolean,
): string {
  const reason = trimEnd(why);
  const subject =
    what.stage === 'result'
      ? `The output of the ${JSON.stringify(what.tool)} action`
      : what.stage === 'llm_request'
        ? 'The request to the model'
        : "The model's response";
  switch (decision) {
    case 'allow':
      return redacted
        ? `${subject} is given with parts redacted by policy (${reason}). Do not try to recover what was redacted.`
        : `${subject} is allowed by policy.`;
    case 'deny':
      return `${subject} was withheld by policy. Reason: ${reason}. Tell the user it was withheld; do not try to obtain it another way.`;
    case 'require_approval':
      return `${subject} is held for an operator's review (${reason}). Wait for the approval; do not repeat the action meanwhile.`;
  }
}
