// Approval analytics (GET /approvals/stats, docs/spec.md section 5.4.1): per rule and kind, how the
// approvals filed since a time ended, how long people took to decide, and the grants given faster
// than anyone could have read the request. One aggregate over `approvals`; a row's outcome is read
// from its status and decision columns: a grant stays a grant when it later expired unused or was
// cancelled (decided_at is kept), and a pending row past its expiry is expired.
import type { TransactionSql } from 'postgres';

export interface ApprovalStats {
  rule: string;
  kind: string;
  filed: number;
  granted: number;
  denied: number;
  expired: number;
  cancelled: number;
  pending: number;
  /** Seconds from filing to a person's grant or denial; null with no decision. */
  decide_p50_seconds: number | null;
  decide_p90_seconds: number | null;
  /** Grants given within FAST_GRANT_SECONDS of the filing. */
  fast_grants: number;
  /** Set when enough were decided (MIN_DECIDED) and every one the same way. */
  suggestion: 'always_granted' | 'always_denied' | null;
}

/** Decisions a rule needs before "always granted" or "always denied" is said of it. */
export const MIN_DECIDED = 5;

interface Row {
  rule: string;
  kind: string;
  filed: string;
  granted: string;
  denied: string;
  expired: string;
  cancelled: string;
  pending: string;
  p50: number | null;
  p90: number | null;
  fast: string;
}

export async function approvalStats(
  tx: TransactionSql,
  since: Date,
  fastGrantSeconds: number,
): Promise<ApprovalStats[]> {
  const rows = await tx<Row[]>`
    with a as (
      select rule, kind, status, decided_at, expires_at,
             extract(epoch from decided_at - created_at)::float8 as took,
             decided_at is not null and status <> 'denied' as was_granted
        from approvals where created_at >= ${since}
    )
    select rule, kind,
           count(*) as filed,
           count(*) filter (where was_granted) as granted,
           count(*) filter (where status = 'denied') as denied,
           count(*) filter (where decided_at is null and (status = 'expired' or (status = 'pending' and expires_at <= now()))) as expired,
           count(*) filter (where decided_at is null and status = 'cancelled') as cancelled,
           count(*) filter (where status = 'pending' and expires_at > now()) as pending,
           percentile_cont(0.5) within group (order by took) filter (where decided_at is not null) as p50,
           percentile_cont(0.9) within group (order by took) filter (where decided_at is not null) as p90,
           count(*) filter (where was_granted and took < ${fastGrantSeconds}) as fast
      from a group by rule, kind order by count(*) desc, rule, kind`;
  return rows.map((r) => {
    const granted = Number(r.granted);
    const denied = Number(r.denied);
    const decided = granted + denied;
    return {
      rule: r.rule,
      kind: r.kind,
      filed: Number(r.filed),
      granted,
      denied,
      expired: Number(r.expired),
      cancelled: Number(r.cancelled),
      pending: Number(r.pending),
      decide_p50_seconds: r.p50 === null ? null : round(r.p50),
      decide_p90_seconds: r.p90 === null ? null : round(r.p90),
      fast_grants: Number(r.fast),
      suggestion:
        decided < MIN_DECIDED ? null : denied === 0 ? 'always_granted' : granted === 0 ? 'always_denied' : null,
    };
  });
}

function round(seconds: number): number {
  return Math.round(seconds * 1000) / 1000;
}
