// What a webhook says (docs/spec.md section 5.8): the event types, the event's data (the approval's
// summary, as GET /approvals lists it, and its link on the page), and the two bodies a receiver gets:
// a Standard Webhooks payload ({type, timestamp, data}) or a Slack incoming-webhook message.
import type { ApprovalStatus, ApprovalSummary, Grant } from '../approvals/approval.js';

export const WEBHOOK_EVENT_TYPES = [
  'approval.created',
  'approval.granted',
  'approval.partially_granted',
  'approval.denied',
  'approval.expired',
  'approval.cancelled',
  'approval.consumed',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export type WebhookFormat = 'standard' | 'slack';

/** One WEBHOOKS entry, as the configuration validated it. */
export interface WebhookEndpoint {
  /** Stable across restarts: the outbox rows name their endpoint by it. */
  readonly name: string;
  readonly url: string;
  readonly format: WebhookFormat;
  /** The Standard Webhooks secret (`whsec_…`); null for `slack`, which is not signed. */
  readonly secret: string | null;
  /** Only these types are sent to it; null: all of them. */
  readonly events: readonly WebhookEventType[] | null;
}

/** The type of the event a transition into `status` is. */
export function eventTypeOf(status: ApprovalStatus): WebhookEventType {
  return status === 'pending' ? 'approval.created' : `approval.${status}`;
}

/**
 * The event's `data`: the approval's summary, as it stood right after the transition, and its link;
 * an approval.partially_granted event adds the grant (who, their name, when, the note).
 */
export interface WebhookEventData extends ApprovalSummary {
  url: string;
  grant?: Omit<Grant, 'requirements'>;
}

/**
 * Where the approval is on the page: absolute under PUBLIC_URL, else the path alone (a receiver
 * resolves it against the address it knows Gatehouse by). The fragment is read by the page, never
 * sent to the server.
 */
export function approvalLink(publicUrl: string | null, id: string): string {
  return `${publicUrl ?? ''}/ui#approval=${id}`;
}

/** An event as the outbox holds it. */
export interface OutboxEvent {
  /** The `webhook-id`: the same on every attempt. */
  readonly id: string;
  readonly type: WebhookEventType;
  /** When the transition committed (the database clock). */
  readonly createdAt: Date;
  /** JSON text of WebhookEventData. */
  readonly data: string;
}

/** The Standard Webhooks payload: `{"type", "timestamp", "data"}`, the same bytes on every attempt. */
export function standardBody(event: OutboxEvent): string {
  return `{"type":${JSON.stringify(event.type)},"timestamp":${JSON.stringify(event.createdAt.toISOString())},"data":${event.data}}`;
}

/**
 * A Slack incoming-webhook message (https://api.slack.com/messaging/webhooks): `{"text": …}` in
 * Slack's mrkdwn, saying what happened, the tool, who asked, why, and the link. Every value is
 * escaped (&, <, >: https://api.slack.com/reference/surfaces/formatting#escaping), so a name or a
 * note cannot mention a channel or forge a link.
 */
export function slackBody(event: OutboxEvent): string {
  const d = JSON.parse(event.data) as WebhookEventData;
  const who = [
    // The name beside the sub it labels: the sub is who it is, the name how people know them.
    d.requester.name ? `${d.requester.name} (${d.requester.sub})` : d.requester.sub,
    d.requester.team && `team ${d.requester.team}`,
    d.requester.agent && `agent ${d.requester.agent}`,
  ]
    .filter((x): x is string => typeof x === 'string' && x !== '')
    .map(slackEscape);
  const head = SLACK_HEADLINES[event.type];
  const by =
    d.grant !== undefined && event.type === 'approval.partially_granted'
      ? ` by ${slackEscape(d.grant.by)}`
      : d.decided_by !== null && (event.type === 'approval.granted' || event.type === 'approval.denied')
        ? ` by ${slackEscape(d.decided_by)}`
        : '';
  const lines = [
    `*${head}${by}*: \`${slackEscape(d.tool)}\` requested by ${who[0]}${who.length > 1 ? ` (${who.slice(1).join(', ')})` : ''}`,
  ];
  lines.push(`Reason: ${slackEscape(d.reason)}`);
  if (d.grant?.note != null && event.type === 'approval.partially_granted')
    lines.push(`Note: ${slackEscape(d.grant.note)}`);
  if (d.decision_note !== null && (event.type === 'approval.granted' || event.type === 'approval.denied')) {
    lines.push(`${event.type === 'approval.granted' ? 'Note' : 'Denial'}: ${slackEscape(d.decision_note)}`);
  }
  // A relative link is not clickable in Slack: without PUBLIC_URL the message names the approval.
  lines.push(
    /^https?:\/\//.test(d.url)
      ? `<${d.url}|Open approval ${d.id}>`
      : `Approval ${d.id} (${slackEscape(d.url)} on Gatehouse)`,
  );
  return JSON.stringify({ text: lines.join('\n') });
}

const SLACK_HEADLINES: Readonly<Record<WebhookEventType, string>> = {
  'approval.created': 'Approval requested',
  'approval.granted': 'Approval granted',
  'approval.partially_granted': 'Approval granted in part (more grants needed)',
  'approval.denied': 'Approval denied',
  'approval.expired': 'Approval expired',
  'approval.cancelled': 'Approval withdrawn by the requester',
  'approval.consumed': 'Approved call redeemed',
};

function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
