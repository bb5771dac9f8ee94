// What every route works with: the engine, and the settings that say who may do what.
import type { UsageSettings } from '../config.js';
import type { Engine, Outbox, WebhookEndpoint } from '../engine/index.js';

export interface AppContext {
  readonly engine: Engine;
  readonly adminRole: string;
  readonly approverRole: string;
  /** RUNTIME_ROLE: may file an approval for a call a crash interrupted (`kind: interrupted_side_effect`). */
  readonly runtimeRole: string;
  /** FAST_GRANT_SECONDS (GET /approvals/stats); default 5. */
  readonly fastGrantSeconds?: number;
  /** Roles that may read `/explain` and `/policies` (POLICY_READER_ROLE): any one of them. */
  readonly policyReaderRoles: readonly string[];
  /** AUDITOR_ROLE: may read GET /decisions, beside admins; default 'auditor'. */
  readonly auditorRole?: string;
  /** USAGE_ROLE, USAGE_ANY_ROLE and USAGE_MAX_USD: who may report spend to POST /usage, and how much at once. */
  readonly usage: UsageSettings;
  /** The webhook endpoints and the outbox, for GET /admin/webhooks; absent or null without a database (503). */
  readonly webhooks?: WebhookAdmin | null;
}

export interface WebhookAdmin {
  /** WEBHOOKS as this replica has it (secrets are never shown). */
  readonly endpoints: readonly WebhookEndpoint[];
  readonly outbox: Pick<Outbox, 'list' | 'counts'>;
}
