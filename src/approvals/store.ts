// The approval store: every read and state transition of the approvals tables (migrations/, whose README
// describes the schema as it stands).
//
// Rules that hold throughout:
// - A transition is ONE conditional UPDATE (`… where status = 'pending' … returning *`); its event row
//   is written by the same statement and its NOTIFY in the same transaction, so exactly one of any
//   number of concurrent callers (on any number of replicas) wins, and the log never disagrees. An
//   approver's answer (grant, deny) first takes the approval row's lock, so the answers to one
//   approval are counted one at a time: a quorum completes exactly once (transition(), below).
// - Expiry is decided by the DATABASE clock (now()), never the app's: a live row past expires_at reads
//   as `expired` at once, and is written as expired (with a `system` event) whenever a transition or a
//   create touches it, or the sweeper runs. The sweeper is housekeeping, never needed for safety.
// - Each transition tells onTransition what it moved in the same transaction (the service queues its
//   webhook events there: an event exists exactly when its transition committed).
// - Every method runs under withDeadline: a busy pool or a dead server answers StoreUnavailableError
//   within deadlineMs, and a call that failed that way never commits later.

import type { PendingQuery, Row, Sql, TransactionSql } from 'postgres';
import { approvalHash, canonicalize } from '../json/canonical.js';
import type { JsonObject, JsonValue } from '../json/value.js';
import type { ApprovalDescriptor, ApprovalRequirement, PolicyIdentity } from '../policy/model.js';
import { withDeadline } from '../db/deadline.js';
import { StoreUnavailableError } from '../db/errors.js';
import {
  APPROVAL_STATUSES,
  LIMITS,
  type Approval,
  type ApprovalEvent,
  type ApprovalStatus,
  type ApprovalSummary,
  type Approver,
  type Grant,
  type Requester,
} from './approval.js';
import { decodeCursor, encodeCursor, type ListOrder } from '../kernel/cursor.js';
import { ListQueryError } from '../kernel/errors.js';
import {
  ApprovalTooLargeError,
  type Ineligible,
  type IneligibleWhy,
  NotEligibleError,
  PendingLimitError,
  RecentlyDeniedError,
} from './errors.js';
import { sweepKeys } from '../db/idempotency.js';
import { checkName, checkRequester, checkText, HASH, interval, positiveMs, storable } from './input.js';
import {
  storedRequirement,
  toApproval,
  toSummary,
  type ApprovalRow,
  type EventRow,
  type ListedRow,
  type SummaryRow,
} from './rows.js';
import { isUuid, uuidv7 } from '../kernel/uuid.js';
import { type ApprovalStats, approvalStats } from './stats.js';

/**
 * The NOTIFY channel; the payload is the approval id, sent on every status change, or CREATED_PREFIX
 * and the id, sent when an approval is filed.
 */
export const APPROVALS_CHANNEL = 'gatehouse_approvals';
export const CREATED_PREFIX = 'new:';

export interface CreateApprovalInput {
  /** From decide(): its requirements give the kind, reason, rule and shapes stored. */
  descriptor: ApprovalDescriptor;
  tool: string;
  args: JsonObject;
  /** The host's facts the request was decided under, if any: bound by the hash, shown to the operator. */
  context?: JsonObject | undefined;
  /** The run the request came from (`run.id`), shown to operators. */
  runId?: string | undefined;
  /** A tool's result held for review (POST /inspect): hashed with the call, shown to operators. */
  result?: JsonValue | undefined;
  requester: Requester;
  policies: readonly PolicyIdentity[];
}

export type TransitionResult =
  /** `changed` false: a grant by someone who had already granted it (nothing written). */
  | { ok: true; approval: Approval; changed?: boolean }
  | {
      ok: false;
      error: 'not_found' | 'self_approval' | 'conflict';
      approval?: Approval /* current state, for conflict */;
    };

/**
 * An approver's amendment of the call they grant (docs/spec.md section 5.4), as the engine decided it
 * under the serving policy.
 */
export interface Amendment {
  args: JsonObject;
  /** The amended call's approval hash: over `requirements`, or over the filed ones when that is null. */
  hash: string;
  /** What the policy asks for the amended call; null when it allows it (the filed requirements then apply). */
  requirements: readonly ApprovalRequirement[] | null;
}

export type ConsumeResult = { ok: true; approval: Approval } | { ok: false; approval: Approval | null };

export interface ListQuery {
  status?: ApprovalStatus;
  tool?: string;
  /** The first requirement's kind, exactly. */
  kind?: string;
  /** The requester's `sub`, exactly (a filter the caller chose). */
  requester?: string;
  /** Restricts the list to this requester's approvals (callers without the approver role). */
  requesterSub?: string;
  /**
   * Text to find, case-insensitively, in the id, tool, kind, rule, reason, requester, run id, the
   * approver, the message and the canonical arguments; in the note too when `searchNotes`.
   */
  q?: string;
  /** Whether `q` also reads decision notes (approvers only: the note is for the record). */
  searchNotes?: boolean;
  /** Only approvals an operator decided (decided_by set): the history. */
  decided?: boolean;
  /**
   * Only pending approvals this approver may answer an open requirement of and has not granted
   * (docs/spec.md section 5.4, `eligible=true`); `none`: nothing (a caller without the approver role).
   */
  eligibleFor?: Approver | 'none';
  /** Newest first (the default) or oldest first, by creation. */
  order?: ListOrder;
  /** Also count every approval the filters match, on all pages. */
  count?: boolean;
  /** 1..200. */
  limit: number;
  /** nextCursor of the previous page (of the same order). */
  cursor?: string;
}

export interface ApprovalPage {
  items: ApprovalSummary[];
  nextCursor: string | null;
  /** With `count`: how many approvals the filters match, on all pages. */
  count?: number;
}

/** A denial's two texts (docs/spec.md section 5.4); a string is the older `reason`, which is both. */
export type DenialText = string | { note?: string | null; message?: string | null } | null;

export interface ApprovalStoreOptions {
  /** How long a pending approval waits for a decision (APPROVAL_TTL). */
  approvalTtlMs: number;
  /** How long a grant stays redeemable (GRANT_TTL). */
  grantTtlMs: number;
  /** Upper bound on every call, including the wait for a pooled connection. */
  deadlineMs: number;
  /** Unexpired pending approvals one requester (`sub`) may hold at once (MAX_PENDING_APPROVALS). Default 100. */
  maxPendingPerRequester?: number;
  /** Largest canonical arguments an approval may hold, in bytes (APPROVAL_MAX_BYTES). Default LIMITS.argsBytes. */
  maxArgsBytes?: number;
  /**
   * After a denial, how long the same requester cannot file the same request again (DENIED_COOLDOWN),
   * in ms; 0 turns it off. Default 0.
   */
  deniedCooldownMs?: number;
  /**
   * Called in each transition's transaction with the approvals it moved (the composition root queues
   * their webhook events there: src/webhooks/outbox.ts), so an event exists exactly when its
   * transition committed. Absent: nothing is told.
   */
  onTransition?: (tx: TransactionSql, moved: readonly ApprovalSummary[], grant?: Grant) => Promise<void>;
}

export function createApprovalStore(sql: Sql, options: ApprovalStoreOptions) {
  const approvalTtl = interval(positiveMs(options.approvalTtlMs, 'approvalTtlMs'));
  const grantTtl = interval(positiveMs(options.grantTtlMs, 'grantTtlMs'));
  const deadlineMs = positiveMs(options.deadlineMs, 'deadlineMs');
  const maxPending = options.maxPendingPerRequester ?? 100;
  if (!Number.isSafeInteger(maxPending) || maxPending < 1)
    throw new RangeError('maxPendingPerRequester must be a positive integer');
  const maxArgsBytes = options.maxArgsBytes ?? LIMITS.argsBytes;
  if (!Number.isSafeInteger(maxArgsBytes) || maxArgsBytes < 2)
    throw new RangeError('maxArgsBytes must be an integer of at least 2');
  const cooldownMs = options.deniedCooldownMs ?? 0;
  if (!Number.isSafeInteger(cooldownMs) || cooldownMs < 0)
    throw new RangeError('deniedCooldownMs must be an integer ≥ 0');
  const cooldown = interval(cooldownMs);
  const run = <T>(fn: (tx: TransactionSql) => Promise<T>): Promise<T> => withDeadline(sql, deadlineMs, fn);
  // In the caller's transaction when it has one (an Idempotency-Key's: the key, the act and the answer commit together).
  const runIn = <T>(tx: TransactionSql | undefined, fn: (tx: TransactionSql) => Promise<T>): Promise<T> =>
    tx ? fn(tx) : run(fn);
  // What a transition moved, told in its transaction; nothing to do when nobody listens.
  const onTransition = options.onTransition;
  // `grant`: a grant short of the quorum, which moved no status (an approval.partially_granted event).
  const emit = async (tx: TransactionSql, moved: readonly SummaryRow[], grant?: Grant): Promise<void> => {
    if (onTransition !== undefined && moved.length > 0) await onTransition(tx, moved.map(toSummary), grant);
  };
  const expireLapsed = async (tx: TransactionSql, where: PendingQuery<Row[]>): Promise<number> => {
    const moved = await expireLapsedRows(tx, where);
    await emit(tx, moved);
    return moved.length;
  };

  async function create(
    input: CreateApprovalInput,
    inTx?: TransactionSql,
  ): Promise<{ approval: Approval; created: boolean }> {
    const { descriptor, requester } = input;
    const { requirements } = descriptor;
    const first = requirements[0];
    if (first === undefined) throw new Error('an approval needs at least one requirement');
    checkName('tool', input.tool);
    requirements.forEach((r, i) => {
      checkName(`requirements.${i}.kind`, r.kind);
      checkName(`requirements.${i}.rule`, r.rule);
      checkName(`requirements.${i}.policy`, r.policy);
      checkText(`requirements.${i}.reason`, r.reason, LIMITS.note);
    });
    checkRequester(requester);
    const args = canonicalize(input.args);
    // A result held for review counts with the arguments: both are what the operator is shown.
    const result = input.result === undefined ? null : canonicalize(input.result);
    const bytes = Buffer.byteLength(args, 'utf8') + (result === null ? 0 : Buffer.byteLength(result, 'utf8'));
    if (bytes > maxArgsBytes) throw new ApprovalTooLargeError(maxArgsBytes);
    // The row must re-hash to its hash, or a grant could be redeemed for something nobody saw.
    const context = input.context !== undefined && Object.keys(input.context).length > 0 ? input.context : undefined;
    const hash = approvalHash({
      tool: input.tool,
      args: input.args,
      context,
      requirements,
      ...(input.result !== undefined ? { result: input.result } : {}),
    });
    if (hash !== descriptor.hash) throw new Error('approval descriptor hash does not match its request');
    const stored = canonicalize(requirements.map((r) => storedRequirement(r, input.tool, input.args)));
    // Rebuilt as plain objects for tx.json (an interface type is not assignable to its JSON type).
    const policies = input.policies.map((p) => ({ policy: p.policy, version: p.version, digest: p.digest }));

    return runIn(inTx, async (tx) => {
      // Insert-or-find, retried only if the live row we collided with left `live` before we read it
      // (or was a lapsed one, expired here: it would otherwise block the insert). The insert happens
      // only while the requester holds fewer than maxPending unexpired pending approvals; concurrent
      // creates by one requester can each see the last free place (read committed), so the cap may
      // be passed by as many creates as are in flight at that instant, never more. Nor while the same
      // request by the same requester was denied less than the cooldown ago.
      const denial = (): PendingQuery<Row[]> => tx`
        select ${summaryColumns(tx)}, ceil(extract(epoch from decided_at + ${cooldown}::interval - now()))::int as retry_after_sec
          from approvals
         where requester_sub = ${requester.sub} and hash = ${hash} and status = 'denied'
           and decided_at > now() - ${cooldown}::interval
         order by decided_at desc limit 1`;
      for (let attempt = 0; attempt < 3; attempt++) {
        const [inserted] = await tx<ApprovalRow[]>`
          with created as (
            insert into approvals (id, status, hash, kind, tool, args, context, run_id, requirements, result, reason, rule,
                                   requester_sub, requester_team, requester_agent, requester_name, policies, expires_at)
            select ${uuidv7()}, 'pending', ${hash}, ${first.kind}, ${input.tool}, ${args},
                   ${context === undefined ? null : canonicalize(context)}, ${input.runId ?? null}, ${stored}, ${result},
                   ${first.reason}, ${first.rule}, ${requester.sub}, ${requester.team},
                   ${requester.agent}, ${requester.name}, ${tx.json(policies)}, now() + ${approvalTtl}::interval
             where ${pendingCount(tx, requester.sub)} < ${maxPending}
                   ${cooldownMs === 0 ? tx`` : tx`and not exists (${denial()})`}
            on conflict (requester_sub, hash) where status in ('pending', 'granted') do nothing
            returning *
          ), logged as (
            insert into approval_events (approval_id, actor, from_status, to_status)
            select id, requester_sub, null, 'pending' from created
          )
          select *, octet_length(args) as args_bytes, false as lapsed,
                 pg_notify(${APPROVALS_CHANNEL}, ${CREATED_PREFIX} || id::text)::text as notified
            from created`;
        // A new approval is notified too, under its own prefix: the operators' live lists (feed.ts)
        // show it at once, and waits (notify.ts), which wait for a change of status, ignore it.
        if (inserted !== undefined) {
          await emit(tx, [inserted]);
          return { approval: toApproval(inserted), created: true };
        }
        if ((await expireLapsed(tx, tx`requester_sub = ${requester.sub} and hash = ${hash}`)) > 0) continue;
        const [live] = await tx<ApprovalRow[]>`
          select ${liveColumns(tx)} from approvals
           where requester_sub = ${requester.sub} and hash = ${hash} and status in ('pending', 'granted')`;
        if (live !== undefined) return { approval: toApproval(live), created: false };
        if (cooldownMs > 0) {
          const [denied] = await tx<(SummaryRow & { retry_after_sec: number })[]>`${denial()}`;
          if (denied !== undefined)
            throw new RecentlyDeniedError(toSummary(denied), Math.max(1, denied.retry_after_sec));
        }
        const [held] = await tx<{ n: number }[]>`select ${pendingCount(tx, requester.sub)} as n`;
        if ((held?.n ?? 0) >= maxPending) throw new PendingLimitError(maxPending);
      }
      throw new StoreUnavailableError('contention');
    });
  }

  /** In `inTx` when given (an Idempotency-Key's replay reads the approval its row names). */
  async function get(id: string, inTx?: TransactionSql): Promise<Approval | null> {
    if (!isUuid(id)) return null;
    return runIn(inTx, async (tx) => {
      const row = await selectById(tx, id);
      return row === undefined ? null : toApproval(row);
    });
  }

  async function list(query: ListQuery): Promise<ApprovalPage> {
    const { limit } = query;
    if (!Number.isInteger(limit) || limit < 1 || limit > LIMITS.pageSize) {
      throw new ListQueryError('invalid_limit', 'limit', `limit must be an integer from 1 to ${LIMITS.pageSize}`);
    }
    if (query.status !== undefined && !APPROVAL_STATUSES.includes(query.status)) {
      throw new ListQueryError('invalid_status', 'status', `status must be one of ${APPROVAL_STATUSES.join(', ')}`);
    }
    for (const [name, value, max] of [
      ['tool', query.tool, LIMITS.name],
      ['kind', query.kind, LIMITS.name],
      ['requester', query.requester, LIMITS.name],
      ['requesterSub', query.requesterSub, LIMITS.name],
      ['q', query.q, LIMITS.search],
    ] as const) {
      if (value !== undefined && !storable(value, max)) {
        throw new ListQueryError('invalid_filter', name, `${name} is not a possible value`);
      }
    }
    const order = query.order ?? 'newest';
    const after = query.cursor === undefined ? null : decodeCursor(query.cursor);
    if (after !== null && after.order !== order) {
      throw new ListQueryError(
        'invalid_cursor',
        'cursor',
        `this cursor continues a list ${after.order} first, not ${order} first`,
      );
    }

    return run(async (tx) => {
      // A fresh fragment for each statement that reads it.
      const filters = (): PendingQuery<Row[]> => tx`
           ${query.status === undefined ? tx`` : statusFilter(tx, query.status)}
           ${query.tool === undefined ? tx`` : tx`and tool = ${query.tool}`}
           ${query.kind === undefined ? tx`` : tx`and kind = ${query.kind}`}
           ${query.requester === undefined ? tx`` : tx`and requester_sub = ${query.requester}`}
           ${query.requesterSub === undefined ? tx`` : tx`and requester_sub = ${query.requesterSub}`}
           ${query.decided === true ? tx`and decided_by is not null` : tx``}
           ${query.eligibleFor === undefined ? tx`` : eligibleFilter(tx, query.eligibleFor)}
           ${query.q === undefined || query.q === '' ? tx`` : searchFilter(tx, query.q, query.searchNotes === true)}`;
      const oldest = order === 'oldest';
      const before =
        after === null
          ? tx``
          : oldest
            ? tx`and (created_at, id) > (${after.at}::text::timestamptz, ${after.id}::uuid)`
            : tx`and (created_at, id) < (${after.at}::text::timestamptz, ${after.id}::uuid)`;
      // Pending and granted rows are read whole through the live index, then the page is cut: the
      // MATERIALIZED fence keeps the planner from walking approvals_listing newest first instead (or
      // from the cursor down), which reads the whole history when the live rows are older than it, as
      // what waits for a human is. The cost is sorting the live rows that match: bounded by what is
      // live, never by the history. Otherwise the CTE is inlined, the cursor condition included.
      const live = query.status === 'pending' || query.status === 'granted' || query.eligibleFor !== undefined;
      const rows = await tx<ListedRow[]>`
        with matching as ${live ? tx`materialized` : tx`not materialized`} (select * from approvals where true ${filters()})
        select ${summaryColumns(tx)},
               to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cursor_at
          from matching
         where true ${before}
         order by ${oldest ? tx`created_at, id` : tx`created_at desc, id desc`}
         limit ${limit + 1}`;
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      const counted =
        query.count === true
          ? await tx<{ n: number }[]>`select count(*)::int as n from approvals where true ${filters()}`
          : null;
      return {
        items: page.map(toSummary),
        nextCursor: rows.length > limit && last !== undefined ? encodeCursor(last.cursor_at, last.id, order) : null,
        ...(counted === null ? {} : { count: counted[0]?.n ?? 0 }),
      };
    });
  }

  /** The summaries of these approvals (those that exist), for the live feed: never the arguments. */
  async function summaries(ids: readonly string[]): Promise<ApprovalSummary[]> {
    const valid = ids.filter(isUuid);
    if (valid.length === 0) return [];
    // One text parameter, as in settled().
    return run(async (tx) => {
      const rows = await tx<SummaryRow[]>`
        select ${summaryColumns(tx)} from approvals where id = any(string_to_array(${valid.join(',')}, ',')::uuid[])`;
      return rows.map(toSummary);
    });
  }

  /**
   * A grant carries a note for the record, never a message: the model is told only that it may run.
   * It counts toward every open requirement the approver may answer; the approval is granted when
   * every requirement has its quorum (docs/spec.md section 5.4).
   */
  async function grant(id: string, approver: Approver, note: string | null): Promise<TransitionResult> {
    if (note !== null) checkText('note', note, LIMITS.note);
    return transition(id, approver, note, null, 'granted');
  }

  /**
   * A grant of the amended call (docs/spec.md section 5.4): the amendment is recorded, the count of
   * grants starts again (earlier grants were for another call), and this grant counts as its first.
   * Eligibility is read from the amended call's requirements.
   */
  async function amend(
    id: string,
    approver: Approver,
    note: string | null,
    amendment: Amendment,
  ): Promise<TransitionResult> {
    if (note !== null) checkText('note', note, LIMITS.note);
    const bytes = Buffer.byteLength(canonicalize(amendment.args), 'utf8');
    if (bytes > maxArgsBytes) throw new ApprovalTooLargeError(maxArgsBytes);
    (amendment.requirements ?? []).forEach((r, i) => {
      checkName(`requirements.${i}.kind`, r.kind);
      checkName(`requirements.${i}.rule`, r.rule);
      checkName(`requirements.${i}.policy`, r.policy);
      checkText(`requirements.${i}.reason`, r.reason, LIMITS.note);
    });
    return transition(id, approver, note, null, 'granted', amendment);
  }

  /** A denial: a note for the record (operators only) and a message for the agent, each optional. */
  async function deny(id: string, approver: Approver, text: DenialText): Promise<TransitionResult> {
    // Named as the body field that carried each (an older `reason` is both).
    const field = typeof text === 'string' ? 'reason' : null;
    const note = typeof text === 'string' ? text : (text?.note ?? null);
    const message = typeof text === 'string' ? text : (text?.message ?? null);
    if (note !== null) checkText(field ?? 'note', note, LIMITS.note);
    if (message !== null) checkText(field ?? 'message', message, LIMITS.note);
    return transition(id, approver, note, message, 'denied');
  }

  /**
   * An approver's answer. Under the approval row's lock (FOR UPDATE), so the answers to one approval
   * are taken one at a time on every replica: each sees the grants committed before it, exactly one
   * grant completes the quorum, and a grant racing a denial either completes first (the denial then
   * finds it granted: 409) or not (the denial wins).
   */
  async function transition(
    id: string,
    approver: Approver,
    note: string | null,
    message: string | null,
    to: 'granted' | 'denied',
    amendment?: Amendment,
  ): Promise<TransitionResult> {
    checkName('approver.sub', approver.sub);
    if (approver.team != null) checkName('approver.team', approver.team);
    for (const role of approver.roles ?? []) checkName('approver.roles', role);
    const name = approver.name ?? null;
    if (name !== null) checkName('approver.name', name);
    if (!isUuid(id)) return { ok: false, error: 'not_found' };

    return run(async (tx): Promise<TransitionResult> => {
      // The lock first, then the read: each statement after it sees every answer committed before it
      // (read committed), the grants included, which a locking read's own snapshot might not.
      const [locked] = await tx<{ id: string }[]>`select id from approvals where id = ${id} for update`;
      const row = locked === undefined ? undefined : await selectById(tx, id);
      if (row === undefined) return { ok: false, error: 'not_found' };
      if (row.requester_sub === approver.sub) return { ok: false, error: 'self_approval' };
      if (row.lapsed) {
        await expireLapsed(tx, tx`id = ${id}`);
        return { ok: false, error: 'conflict', approval: toApproval(row) };
      }
      if (row.status !== 'pending') return { ok: false, error: 'conflict', approval: toApproval(row) };
      if (to === 'granted' && amendment === undefined && (row.grants ?? []).some((g) => g.by === approver.sub))
        return { ok: true, approval: toApproval(row), changed: false };
      if (amendment !== undefined) await recordAmendment(tx, row, approver, amendment);

      const standing = await tx<StandingRow[]>`
        select (r.n - 1)::int as idx, coalesce(r.req->>'rule', a.rule) as rule, coalesce(r.req->>'policy', '') as policy,
               ${quorumOf(tx)} as quorum, ${grantedCount(tx)} as granted, ${checks(tx, approver)}
          from approvals a cross join lateral ${requirementsOf(tx)}
         where a.id = ${id}
         order by r.n`;
      const open = standing.filter((r) => r.granted < r.quorum);
      // A pending approval whose every requirement has its quorum cannot be (its last grant moved it).
      if (open.length === 0) throw new Error('a pending approval has no open requirement');
      const mine = open.filter((r) => r.role_ok && r.team_ok && r.user_ok && r.separation_ok);
      if (mine.length === 0) throw new NotEligibleError(open.map(ineligible));

      if (to === 'granted') {
        const counted = mine.map((r) => r.idx);
        // Stamped now, under the lock (not at the transaction's start, which may precede an answer it
        // waited for): the grants' order is the order they counted in.
        const [g] = await tx<GrantInsertRow[]>`
          insert into approval_grants (approval_id, round, approver, name, at, note, requirements)
          values (${id}, (select grant_round from approvals where id = ${id}), ${approver.sub}, ${name},
                  clock_timestamp(), ${note}, string_to_array(${counted.join(',')}, ',')::int[])
          returning approver as by, name, at, note, requirements`;
        const complete = standing.every((r) => r.granted + (counted.includes(r.idx) ? 1 : 0) >= r.quorum);
        if (!complete) {
          // Still pending: the page and the webhooks learn of the grant; waits, which wait for a
          // change of status, read it as no change (notify.ts).
          const [still] = await tx<ApprovalRow[]>`
            select ${liveColumns(tx)}, pg_notify(${APPROVALS_CHANNEL}, id::text)::text as notified
              from approvals where id = ${id}`;
          const grant: Grant = {
            by: g!.by,
            name: g!.name,
            at: g!.at.toISOString(),
            note: g!.note,
            requirements: g!.requirements,
          };
          await emit(tx, [still!], grant);
          return { ok: true, approval: toApproval(still!) };
        }
      }

      // A grant restarts the clock: the agent has GRANT_TTL from now to redeem it.
      const newExpiry = to === 'granted' ? tx`, expires_at = now() + ${grantTtl}::interval` : tx``;
      const [moved] = await tx<ApprovalRow[]>`
        with moved as (
          update approvals
             set status = ${to}, decided_by = ${approver.sub}, decided_at = now(), decision_note = ${note},
                 decision_message = ${message} ${newExpiry}
           where id = ${id} and status = 'pending' and expires_at > now() and requester_sub <> ${approver.sub}
          returning *
        ), logged as (
          insert into approval_events (approval_id, actor, from_status, to_status, note, message)
          select id, decided_by, 'pending', status, decision_note, decision_message from moved
        )
        select *, octet_length(args) as args_bytes, false as lapsed, ${grantsColumn(tx, 'moved')},
               pg_notify(${APPROVALS_CHANNEL}, id::text)::text as notified from moved`;
      // The notification is delivered at COMMIT to every replica's LISTEN connection, never on rollback.
      // The row is locked and was pending and unexpired a moment ago (by now(), fixed for the transaction).
      if (moved === undefined) throw new Error('a locked pending approval did not move');
      await emit(tx, [moved]);
      return { ok: true, approval: toApproval(moved) };
    });
  }

  /**
   * Writes an amendment on the locked pending row, and the next round of grants: the row must re-hash
   * to the amendment's hash, or a grant could be redeemed for something nobody decided.
   */
  async function recordAmendment(
    tx: TransactionSql,
    row: ApprovalRow,
    approver: Approver,
    amendment: Amendment,
  ): Promise<void> {
    const filed = toApproval(row);
    const hash = approvalHash({
      tool: filed.tool,
      args: amendment.args,
      context: filed.context,
      requirements: amendment.requirements ?? filed.requirements,
      ...(filed.result !== undefined ? { result: filed.result } : {}),
    });
    if (hash !== amendment.hash) throw new Error('amendment hash does not match its call');
    const stored =
      amendment.requirements === null
        ? null
        : canonicalize(amendment.requirements.map((r) => storedRequirement(r, filed.tool, amendment.args)));
    await tx`
      update approvals
         set amended_args = ${canonicalize(amendment.args)}, amended_hash = ${hash}, amended_requirements = ${stored},
             amended_by = ${approver.sub}, amended_at = clock_timestamp(), grant_round = grant_round + 1
       where id = ${row.id} and status = 'pending'`;
  }

  async function consume(
    id: string,
    requester: { sub: string },
    hash: string,
    inTx?: TransactionSql,
  ): Promise<ConsumeResult> {
    checkName('requester.sub', requester.sub);
    if (!isUuid(id)) return { ok: false, approval: null };

    return runIn(inTx, async (tx): Promise<ConsumeResult> => {
      // A malformed hash cannot match (and could not even be sent, if it held U+0000): straight to the read.
      const [moved] = !HASH.test(hash)
        ? []
        : await tx<ApprovalRow[]>`
        with moved as (
          update approvals
             set status = 'consumed', consumed_at = now()
           where id = ${id} and status = 'granted' and expires_at > now()
             and requester_sub = ${requester.sub} and coalesce(amended_hash, hash) = ${hash}
          returning *
        ), logged as (
          insert into approval_events (approval_id, actor, from_status, to_status)
          select id, requester_sub, 'granted', 'consumed' from moved
        )
        select *, octet_length(args) as args_bytes, false as lapsed, ${grantsColumn(tx, 'moved')},
               pg_notify(${APPROVALS_CHANNEL}, id::text)::text as notified from moved`;
      if (moved !== undefined) {
        await emit(tx, [moved]);
        return { ok: true, approval: toApproval(moved) };
      }

      const row = await selectById(tx, id);
      // Someone else's approval does not exist for this caller (the API answers 404, not 403).
      if (row === undefined || row.requester_sub !== requester.sub) return { ok: false, approval: null };
      if (row.lapsed) await expireLapsed(tx, tx`id = ${id}`);
      return { ok: false, approval: toApproval(row) };
    });
  }

  /**
   * The requester withdraws its pending or granted approval: `cancelled`, final (docs/spec.md section
   * 5.4). Someone else's is not_found, as reads are; one already decided otherwise is a conflict.
   */
  async function cancel(id: string, requester: { sub: string }): Promise<TransitionResult> {
    checkName('requester.sub', requester.sub);
    if (!isUuid(id)) return { ok: false, error: 'not_found' };
    return run(async (tx): Promise<TransitionResult> => {
      // FOR UPDATE re-reads the row after a concurrent grant, deny or redeem, so the event records
      // the state actually left (as expireLapsed does).
      const [moved] = await tx<ApprovalRow[]>`
        with due as (
          select id, status from approvals
           where id = ${id} and status in ('pending', 'granted') and expires_at > now() and requester_sub = ${requester.sub}
           for update
        ), moved as (
          update approvals set status = 'cancelled' where id = any(array(select id from due))
          returning *
        ), logged as (
          insert into approval_events (approval_id, actor, from_status, to_status)
          select moved.id, moved.requester_sub, due.status, 'cancelled' from moved join due using (id)
        )
        select moved.*, octet_length(moved.args) as args_bytes, false as lapsed, ${grantsColumn(tx, 'moved')},
               pg_notify(${APPROVALS_CHANNEL}, moved.id::text)::text as notified
          from moved`;
      if (moved !== undefined) {
        await emit(tx, [moved]);
        return { ok: true, approval: toApproval(moved) };
      }
      const row = await selectById(tx, id);
      if (row === undefined || row.requester_sub !== requester.sub) return { ok: false, error: 'not_found' };
      if (row.lapsed) await expireLapsed(tx, tx`id = ${id}`);
      return { ok: false, error: 'conflict', approval: toApproval(row) };
    });
  }

  /**
   * Of these ids, those no longer waiting for a decision: decided, expired (also when only lapsed) or
   * absent. One statement for every long-poll of a replica; it reads the status, never the arguments.
   */
  async function settled(ids: readonly string[]): Promise<string[]> {
    const valid = ids.filter(isUuid);
    if (valid.length === 0) return [];
    // One text parameter (UUIDs hold no comma): postgres.js sends an array parameter only when it
    // knows the array type, which this pool does not fetch.
    return run(async (tx) => {
      const rows = await tx<{ id: string }[]>`
        select id from approvals
         where id = any(string_to_array(${valid.join(',')}, ',')::uuid[]) and status = 'pending' and expires_at > now()`;
      const waiting = new Set(rows.map((r) => r.id));
      return valid.filter((id) => !waiting.has(id.toLowerCase()));
    });
  }

  /** Marks every live approval past expires_at as expired (returns how many), and drops stale idempotency keys. For a periodic timer. */
  function sweep(): Promise<number> {
    return run(async (tx) => {
      const expired = await expireLapsed(tx, tx`true`);
      await sweepKeys(tx);
      return expired;
    });
  }

  async function events(id: string): Promise<ApprovalEvent[]> {
    if (!isUuid(id)) return [];
    return run(async (tx) => {
      const rows = await tx<EventRow[]>`
        select id, approval_id, at, actor, from_status, to_status, note, message
          from approval_events where approval_id = ${id} order by id`;
      return rows.map((r) => ({
        id: Number(r.id),
        approval_id: r.approval_id,
        at: r.at.toISOString(),
        actor: r.actor,
        from_status: r.from_status,
        to_status: r.to_status,
        note: r.note,
        message: r.message,
      }));
    });
  }

  /** Whether `at` (an ISO time) is still ahead by the database clock, which reads every expiry. */
  async function stillAhead(at: string, inTx?: TransactionSql): Promise<boolean> {
    return runIn(inTx, async (tx) => {
      const [row] = await tx<{ ahead: boolean }[]>`select ${at}::timestamptz > now() as ahead`;
      return row?.ahead === true;
    });
  }

  /** Per rule and kind, the approvals filed since `since` (./stats.ts). */
  function stats(since: Date, fastGrantSeconds: number): Promise<ApprovalStats[]> {
    return run((tx) => approvalStats(tx, since, fastGrantSeconds));
  }

  return {
    create,
    get,
    list,
    summaries,
    settled,
    grant,
    amend,
    deny,
    consume,
    cancel,
    sweep,
    stillAhead,
    events,
    stats,
    /** `fn` in one transaction under the deadline, as each method runs its own: for a caller that adds to it (a decision's record). */
    transaction: run,
  };
}

export type ApprovalStore = ReturnType<typeof createApprovalStore>;

// ---- SQL pieces --------------------------------------------------------------------------------------

/** The requester's unexpired pending approvals, as an SQL scalar subquery (an int). */
function pendingCount(tx: TransactionSql, sub: string): PendingQuery<Row[]> {
  return tx`(select count(*)::int from approvals where requester_sub = ${sub} and status = 'pending' and expires_at > now())`;
}

/** Every column but the arguments and the shapes, their size, and whether the row lapsed. */
function summaryColumns(tx: TransactionSql): PendingQuery<Row[]> {
  // octet_length of a TOASTed value reads its header, not the value.
  return tx`id, status, hash, kind, tool, reason, rule, requester_sub, requester_team, requester_agent, requester_name, run_id,
            created_at, expires_at, decided_by, decided_at, decision_note, decision_message, consumed_at, amended_by, amended_at,
            octet_length(args) as args_bytes, (status in ('pending', 'granted') and expires_at <= now()) as lapsed`;
}

function liveColumns(tx: TransactionSql): PendingQuery<Row[]> {
  return tx`*, octet_length(args) as args_bytes, (status in ('pending', 'granted') and expires_at <= now()) as lapsed,
            ${grantsColumn(tx, 'approvals')}`;
}

/**
 * The grants of the approval row of `table` (its alias) since its last amendment (earlier ones were for
 * another call), oldest first, as a json array named `grants`.
 */
function grantsColumn(tx: TransactionSql, table: string): PendingQuery<Row[]> {
  return tx`(select coalesce(json_agg(json_build_object('by', g.approver, 'name', g.name, 'at', g.at, 'note', g.note,
                                                         'requirements', g.requirements) order by g.at, g.approver), '[]'::json)
               from approval_grants g where g.approval_id = ${tx(table)}.id and g.round = ${tx(table)}.grant_round) as grants`;
}

// ---- Eligibility (docs/spec.md section 2.4), in SQL: the grant path and the `eligible=true` list read
// the same checks. Over approval `a` and its requirements `r(req, n)` (requirementsOf).

/**
 * Each requirement of approval `a` as `r(req, n)`: the amended call's when it asks for its own
 * (migrations/0021); a row written before migrations/0005 has one, with none of the lists.
 */
function requirementsOf(tx: TransactionSql): PendingQuery<Row[]> {
  return tx`jsonb_array_elements(coalesce(a.amended_requirements::text, a.requirements::text, '[{}]')::jsonb) with ordinality r(req, n)`;
}

function quorumOf(tx: TransactionSql): PendingQuery<Row[]> {
  return tx`coalesce((r.req->>'quorum')::int, 1)`;
}

/** How many grants counted toward requirement r of approval a, since its last amendment. */
function grantedCount(tx: TransactionSql): PendingQuery<Row[]> {
  return tx`(select count(*)::int from approval_grants g
              where g.approval_id = a.id and g.round = a.grant_round and (r.n - 1)::int = any(g.requirements))`;
}

/**
 * Whether the approver passes each of requirement r's narrowing: every list given must hold its role
 * (any of them), team or sub, and `separate_from_requester: team` wants an approver with a team other
 * than the requester's (one without a team cannot show it is separate). The roles travel as one JSON
 * text parameter: postgres.js sends an array parameter only when it knows the array type, which this
 * pool does not fetch, and a role may hold a comma.
 */
function checks(tx: TransactionSql, approver: Approver): PendingQuery<Row[]> {
  const roles = JSON.stringify(approver.roles ?? []);
  const team = approver.team ?? null;
  return tx`
    (r.req->'approvers'->'roles' is null
      or r.req->'approvers'->'roles' ?| array(select jsonb_array_elements_text(${roles}::text::jsonb))) as role_ok,
    (r.req->'approvers'->'teams' is null or coalesce(r.req->'approvers'->'teams' ? ${team}::text, false)) as team_ok,
    (r.req->'approvers'->'users' is null or r.req->'approvers'->'users' ? ${approver.sub}::text) as user_ok,
    (r.req->>'separate_from_requester' is distinct from 'team'
      or coalesce(${team}::text is distinct from a.requester_team and ${team}::text is not null, false)) as separation_ok`;
}

/**
 * The `eligible=true` filter over `approvals`: pending, unexpired, not the approver's own request,
 * not granted by them yet, and with an open requirement (short of its quorum) they pass every check of.
 */
function eligibleFilter(tx: TransactionSql, approver: Approver | 'none'): PendingQuery<Row[]> {
  if (approver === 'none') return tx`and false`;
  return tx`
    and status = 'pending' and expires_at > now() and requester_sub <> ${approver.sub}
    and not exists (select 1 from approval_grants mine
                     where mine.approval_id = approvals.id and mine.round = approvals.grant_round and mine.approver = ${approver.sub})
    and exists (
      select 1 from (select ${checks(tx, approver)}, ${quorumOf(tx)} as quorum, ${grantedCount(tx)} as granted
                       from (select approvals.id, approvals.requirements, approvals.amended_requirements,
                                    approvals.grant_round, approvals.requester_team) a
                            cross join lateral ${requirementsOf(tx)}) e
       where e.role_ok and e.team_ok and e.user_ok and e.separation_ok and e.granted < e.quorum)`;
}

/** A requirement of an approval as the grant path reads it (store.decide). */
interface StandingRow {
  idx: number;
  rule: string;
  policy: string;
  quorum: number;
  granted: number;
  role_ok: boolean;
  team_ok: boolean;
  user_ok: boolean;
  separation_ok: boolean;
}

interface GrantInsertRow {
  by: string;
  name: string | null;
  at: Date;
  note: string | null;
  requirements: number[];
}

function ineligible(r: StandingRow): Ineligible {
  const why: IneligibleWhy[] = [];
  if (!r.role_ok) why.push('role');
  if (!r.team_ok) why.push('team');
  if (!r.user_ok) why.push('user');
  if (!r.separation_ok) why.push('separation');
  return { rule: r.rule, policy: r.policy, why };
}

function selectById(tx: TransactionSql, id: string): Promise<ApprovalRow | undefined> {
  return tx<ApprovalRow[]>`select ${liveColumns(tx)} from approvals where id = ${id}`.then((rows) => rows[0]);
}

/**
 * `q` anywhere in what a list shows of an approval, and in its canonical arguments, case-insensitively
 * (LIKE's own characters in it are literal). It reads each candidate row's arguments: on the live
 * rows that is bounded by what is live; over the history it is bounded by DB_DEADLINE_MS.
 */
function searchFilter(tx: TransactionSql, q: string, notes: boolean): PendingQuery<Row[]> {
  const pattern = `%${q.replace(/[\\%_]/g, '\\$&')}%`;
  return tx`and (id::text ilike ${pattern} or tool ilike ${pattern} or kind ilike ${pattern} or rule ilike ${pattern}
                 or reason ilike ${pattern} or requester_sub ilike ${pattern} or requester_team ilike ${pattern}
                 or requester_agent ilike ${pattern} or requester_name ilike ${pattern} or run_id ilike ${pattern} or decided_by ilike ${pattern}
                 or decision_message ilike ${pattern} or args ilike ${pattern}
                 ${notes ? tx`or decision_note ilike ${pattern}` : tx``})`;
}

// The status filter agrees with the status list() shows: a live row past expiry is `expired`. Statuses
// are literals, never parameters: the planner must see that `status = 'pending'` implies the predicate
// of approvals_live_request, the index that serves every query about live rows (migrations/0003).
function statusFilter(tx: TransactionSql, status: ApprovalStatus): PendingQuery<Row[]> {
  switch (status) {
    case 'pending':
      return tx`and status = 'pending' and expires_at > now()`;
    case 'granted':
      return tx`and status = 'granted' and expires_at > now()`;
    case 'expired':
      return tx`and (status = 'expired' or (status in ('pending', 'granted') and expires_at <= now()))`;
    case 'denied':
      return tx`and status = 'denied'`;
    case 'consumed':
      return tx`and status = 'consumed'`;
    case 'cancelled':
      return tx`and status = 'cancelled'`;
  }
}

/**
 * Writes `expired` (with a `system` event and a NOTIFY each) for the live rows past expiry that match
 * `where`; returns their summaries (their webhook events are the caller's to queue). FOR UPDATE
 * re-checks each row after any concurrent change, so a row granted or consumed meanwhile is skipped,
 * and from_status is the state actually left. The update finds the locked rows by primary key, one
 * lookup each: written as a join (UPDATE … FROM due), the planner, which believes most rows are past
 * expires_at (the history's are), would hash-join a scan of the whole table. The arguments are read
 * for their size only.
 */
async function expireLapsedRows(tx: TransactionSql, where: PendingQuery<Row[]>): Promise<SummaryRow[]> {
  return tx<SummaryRow[]>`
    with due as (
      select id, status from approvals
       where status in ('pending', 'granted') and expires_at <= now() and ${where}
       for update
    ), moved as (
      update approvals set status = 'expired' where id = any(array(select id from due))
      returning id, status, hash, kind, tool, reason, rule, requester_sub, requester_team, requester_agent, requester_name, run_id,
                created_at, expires_at, decided_by, decided_at, decision_note, decision_message, consumed_at,
                amended_by, amended_at, octet_length(args) as args_bytes
    ), logged as (
      insert into approval_events (approval_id, actor, from_status, to_status)
      select id, 'system', due.status, 'expired' from moved join due using (id)
    )
    select moved.*, false as lapsed, pg_notify(${APPROVALS_CHANNEL}, id::text)::text as notified from moved`;
}
