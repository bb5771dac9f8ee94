import type { JsonObject } from '../json/value.js';

/** Who is asking: set by the host from a verified token, never by the model. Conditions read it as `$caller`. */
export interface Identity {
  readonly user: string;
  readonly team: string | null;
  readonly agent: string | null;
  readonly roles: readonly string[];
  /**
   * The person's or agent's display name (the token's `name`, else `preferred_username`, else
   * `email`): shown beside `user` on the page, stored with approvals and grants. Never used for a
   * decision: conditions read it only as one of `claims`, like any claim.
   */
  readonly name?: string;
  /** Every claim of the verified token (conditions read them as `$caller.claims.NAME`). */
  readonly claims?: Readonly<JsonObject>;
}
