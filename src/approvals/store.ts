// The approval store: every read and state transition of the approvals tables (migrations/, whose README
// describes the schema as it stands).
//
// Rules that hold throughout:
// - A transition is ONE conditional UPDATE (`… where status = 'pending' … returning *`); its event row
//   is written by the same statement and its NOTIFY in the same transaction, so exactly one of any
//   number of concurrent callers (on any number of replicas) wins, and the log never disagrees.
// - Expiry is decided by the DATABASE clock (now()), never the app's: a live row past expires_at reads
//   as `expired` at once, and is written as expired (with a `system` event) whenever a transition or a
//   create touches it, or the sweeper runs. The sweeper is housekeeping, never needed for safety.
// - Every method runs under withDeadline: a busy pool or a dead server answers StoreUnavailableError
//   within deadlineMs, and a call that failed that way never commits later.

import type { PendingQuery, Row, Sql, TransactionSql } from 'postgres';
import { approvalHash, canonicalize, isDefaultShape } from '../json/canonical.js';
import { parseJson } from '../json/parse.js';
import { isWellFormed } from '../json/unicode.js';
import { isJsonObject } from '../json/value.js';
import type { JsonObject, JsonValue } from '../json/value.js';
import type { ApprovalDescriptor, ApprovalRequirement, PolicyIdentity } from '../policy/model.js';
import { withDeadline } from '../db/deadline.js';
import { StoreUnavailableError } from '../db/errors.js';
import { isUuid, uuidv7 } from './uuid.js';

export type ApprovalStatus = 'pending' | 'granted' | 'denied' | 'expired' | 'consumed';
export const APPROVAL_STATUSES: readonly ApprovalStatus[] = ['pending', 'granted', 'denied', 'expired', 'consumed'];

/** The NOTIFY channel; the payload is the approval id. Sent on every status change. */
export const APPROVALS_CHANNEL = 'gatehouse_approvals';

/** Limits the migration's CHECKs enforce; exported so the HTTP schemas can say the same. */
export const LIMITS = {
  /** Grant note, deny reason, the policy's reason (characters). */
  note: 2000,
  /** sub, team, agent, tool, kind, rule (characters). */
  name: 512,
  /** Page size of list(). */
  pageSize: 200,
  /** APPROVAL_MAX_BYTES' default: the canonical arguments an approval may hold (bytes of UTF-8). */
  argsBytes: 65_536,
} as const;

export interface Requester {
  sub: string;
  team: string | null;
  agent: string | null;
}

/**
 * What a list shows of an approval: everything but the arguments and the shapes picked from them,
 * which only GET /approvals/{id} reads (a page of 200 costs what its rows' names and times cost,
 * whatever the arguments weigh). `kind`, `reason` and `rule` are the first requirement's.
 */
export interface ApprovalSummary {
  id: string;
  /** `expired` as soon as a pending or granted approval is past expires_at (database clock). */
  status: ApprovalStatus;
  kind: string;
  hash: string;
  tool: string;
  reason: string;
  rule: string;
  requester: Requester;
  created_at: string;
  expires_at: string;
  decided_by: string | null;
  decided_at: string | null;
  decision_note: string | null;
  consumed_at: string | null;
  /** Bytes of the canonical arguments. */
  args_bytes: number;
}

/** The API shape of one approval, whole. */
export interface Approval extends ApprovalSummary {
  /** Parsed from the stored canonical text: number lexemes survive, so it re-hashes to `hash`. */
  args: JsonObject;
  /** The first requirement's. */
  capability: JsonObject;
  /** The first requirement's. Model-chosen content: label it so wherever it is shown. */
  presentation: JsonObject;
  /** Every policy file that asked for this approval, in load order; the hash covers all of them. */
  requirements: ApprovalRequirement[];
  policies: PolicyIdentity[];
}

export interface ApprovalEvent {
  id: number;
  approval_id: string;
  at: string;
  /** The sub that acted, or `system` for expiry. */
  actor: string;
  /** null for the creation event. */
  from_status: ApprovalStatus | null;
  to_status: ApprovalStatus;
  note: string | null;
}

export interface CreateApprovalInput {
  /** From decide(): its requirements give the kind, reason, rule and shapes stored. */
  descriptor: ApprovalDescriptor;
  tool: string;
  args: JsonObject;
  requester: Requester;
  policies: readonly PolicyIdentity[];
}

export type TransitionResult =
  | { ok: true; approval: Approval }
  | { ok: false; error: 'not_found' | 'self_approval' | 'conflict'; approval?: Approval /* current state, for conflict */ };

export type ConsumeResult = { ok: true; approval: Approval } | { ok: false; approval: Approval | null };

export interface ListQuery {
  status?: ApprovalStatus;
  tool?: string;
  /** Restricts the list to this requester's approvals (callers without the approver role). */
  requesterSub?: string;
  /** 1..200. */
  limit: number;
  /** nextCursor of the previous page. */
  cursor?: string;
}

export interface ApprovalPage {
  items: ApprovalSummary[];
  nextCursor: string | null;
}

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
}

/**
 * The requester already holds maxPendingPerRequester unexpired pending approvals: one agent cannot
 * flood the operators' queue. The route answers 429; a decision or an expiry frees a place.
 */
export class PendingLimitError extends Error {
  constructor(readonly limit: number) {
    super(`the requester already has ${limit} pending approvals`);
    this.name = 'PendingLimitError';
  }
}

/** The arguments are larger than an approval may hold: nothing is stored, the route answers 413. */
export class ApprovalTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`the canonical arguments are larger than ${limit} bytes`);
    this.name = 'ApprovalTooLargeError';
  }
}

/**
 * The requester's same request was denied less than the cooldown ago: nothing is stored, the route
 * answers 409 with the denial, so one agent cannot put a refused request back in front of the
 * operators at once.
 */
export class RecentlyDeniedError extends Error {
  constructor(readonly denial: ApprovalSummary, readonly retryAfterSec: number) {
    super('the same request was denied recently');
    this.name = 'RecentlyDeniedError';
  }
}

/** A list() query the caller got wrong: the route answers 400, pointing at `field`. */
export class ListQueryError extends Error {
  readonly code: 'invalid_cursor' | 'invalid_limit' | 'invalid_status' | 'invalid_filter';
  /** The ListQuery member at fault. */
  readonly field: 'cursor' | 'limit' | 'status' | 'tool' | 'requesterSub';
  constructor(code: ListQueryError['code'], field: ListQueryError['field'], message: string) {
    super(message);
    this.name = 'ListQueryError';
    this.code = code;
    this.field = field;
  }

  /** The field is the caller's `sub`, from the token, not from the query. */
  get fromToken(): boolean {
    return this.field === 'requesterSub';
  }
}

/** Input the database could not hold (too long, or containing U+0000): the route answers 400/422. */
export class ApprovalInputError extends Error {
  readonly field: string;
  constructor(field: string, problem: string) {
    super(`${field}: ${problem}`);
    this.name = 'ApprovalInputError';
    this.field = field;
  }

  /** The field is a requester's or an approver's identity, from the token, not from the body. */
  get fromToken(): boolean {
    return this.field.startsWith('requester.') || this.field.startsWith('approver.');
  }
}

// A row as SELECTed with summaryColumns. `lapsed`: live but past expires_at by the database clock.
interface SummaryRow {
  id: string;
  status: ApprovalStatus;
  hash: string;
  kind: string;
  tool: string;
  reason: string;
  rule: string;
  requester_sub: string;
  requester_team: string | null;
  requester_agent: string | null;
  created_at: Date;
  expires_at: Date;
  decided_by: string | null;
  decided_at: Date | null;
  decision_note: string | null;
  consumed_at: Date | null;
  args_bytes: number;
  lapsed: boolean;
}

// A row as SELECTed with liveColumns: all of it.
interface ApprovalRow extends SummaryRow {
  args: string;
  /** null when `requirements` holds the shapes (every row written since migrations/0005). */
  capability: string | null;
  presentation: string | null;
  /** Canonical JSON array of StoredRequirement; null in rows written before migrations/0005. */
  requirements: string | null;
  policies: PolicyIdentity[];
}

interface ListedRow extends SummaryRow {
  cursor_at: string;
}

interface EventRow {
  id: string; // bigint arrives as a string
  approval_id: string;
  at: Date;
  actor: string;
  from_status: ApprovalStatus | null;
  to_status: ApprovalStatus;
  note: string | null;
}

export function createApprovalStore(sql: Sql, options: ApprovalStoreOptions) {
  const approvalTtl = interval(positiveMs(options.approvalTtlMs, 'approvalTtlMs'));
  const grantTtl = interval(positiveMs(options.grantTtlMs, 'grantTtlMs'));
  const deadlineMs = positiveMs(options.deadlineMs, 'deadlineMs');
  const maxPending = options.maxPendingPerRequester ?? 100;
  if (!Number.isSafeInteger(maxPending) || maxPending < 1) throw new RangeError('maxPendingPerRequester must be a positive integer');
  const maxArgsBytes = options.maxArgsBytes ?? LIMITS.argsBytes;
  if (!Number.isSafeInteger(maxArgsBytes) || maxArgsBytes < 2) throw new RangeError('maxArgsBytes must be an integer of at least 2');
  const cooldownMs = options.deniedCooldownMs ?? 0;
  if (!Number.isSafeInteger(cooldownMs) || cooldownMs < 0) throw new RangeError('deniedCooldownMs must be an integer ≥ 0');
  const cooldown = interval(cooldownMs);
  const run = <T>(fn: (tx: TransactionSql) => Promise<T>): Promise<T> => withDeadline(sql, deadlineMs, fn);

  async function create(input: CreateApprovalInput): Promise<{ approval: Approval; created: boolean }> {
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
    if (Buffer.byteLength(args, 'utf8') > maxArgsBytes) throw new ApprovalTooLargeError(maxArgsBytes);
    // The row must re-hash to its hash, or a grant could be redeemed for something nobody saw.
    const hash = approvalHash({ tool: input.tool, args: input.args, requirements });
    if (hash !== descriptor.hash) throw new Error('approval descriptor hash does not match its request');
    const stored = canonicalize(requirements.map((r) => storedRequirement(r, input.tool, input.args)));
    // Rebuilt as plain objects for tx.json (an interface type is not assignable to its JSON type).
    const policies = input.policies.map((p) => ({ policy: p.policy, version: p.version, digest: p.digest }));

    return run(async (tx) => {
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
            insert into approvals (id, status, hash, kind, tool, args, requirements, reason, rule,
                                   requester_sub, requester_team, requester_agent, policies, expires_at)
            select ${uuidv7()}, 'pending', ${hash}, ${first.kind}, ${input.tool}, ${args}, ${stored},
                   ${first.reason}, ${first.rule}, ${requester.sub}, ${requester.team},
                   ${requester.agent}, ${tx.json(policies)}, now() + ${approvalTtl}::interval
             where ${pendingCount(tx, requester.sub)} < ${maxPending}
                   ${cooldownMs === 0 ? tx`` : tx`and not exists (${denial()})`}
            on conflict (requester_sub, hash) where status in ('pending', 'granted') do nothing
            returning *
          ), logged as (
            insert into approval_events (approval_id, actor, from_status, to_status)
            select id, requester_sub, null, 'pending' from created
          )
          select *, octet_length(args) as args_bytes, false as lapsed from created`;
        if (inserted !== undefined) return { approval: toApproval(inserted), created: true };
        if ((await expireLapsed(tx, tx`requester_sub = ${requester.sub} and hash = ${hash}`)) > 0) continue;
        const [live] = await tx<ApprovalRow[]>`
          select ${liveColumns(tx)} from approvals
           where requester_sub = ${requester.sub} and hash = ${hash} and status in ('pending', 'granted')`;
        if (live !== undefined) return { approval: toApproval(live), created: false };
        if (cooldownMs > 0) {
          const [denied] = await tx<(SummaryRow & { retry_after_sec: number })[]>`${denial()}`;
          if (denied !== undefined) throw new RecentlyDeniedError(toSummary(denied), Math.max(1, denied.retry_after_sec));
        }
        const [held] = await tx<{ n: number }[]>`select ${pendingCount(tx, requester.sub)} as n`;
        if ((held?.n ?? 0) >= maxPending) throw new PendingLimitError(maxPending);
      }
      throw new StoreUnavailableError('contention');
    });
  }

  async function get(id: string): Promise<Approval | null> {
    if (!isUuid(id)) return null;
    return run(async (tx) => {
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
    for (const [name, value] of [['tool', query.tool], ['requesterSub', query.requesterSub]] as const) {
      if (value !== undefined && !storable(value, LIMITS.name)) {
        throw new ListQueryError('invalid_filter', name, `${name} is not a possible value`);
      }
    }
    const after = query.cursor === undefined ? null : decodeCursor(query.cursor);

    return run(async (tx) => {
      const filters = tx`
           ${query.status === undefined ? tx`` : statusFilter(tx, query.status)}
           ${query.tool === undefined ? tx`` : tx`and tool = ${query.tool}`}
           ${query.requesterSub === undefined ? tx`` : tx`and requester_sub = ${query.requesterSub}`}`;
      const before = after === null ? tx`` : tx`and (created_at, id) < (${after.at}::text::timestamptz, ${after.id}::uuid)`;
      // Pending and granted rows are read whole through the live index, then the page is cut: the
      // MATERIALIZED fence keeps the planner from walking approvals_listing newest first instead (or
      // from the cursor down), which reads the whole history when the live rows are older than it, as
      // what waits for a human is. The cost is sorting the live rows that match: bounded by what is
      // live, never by the history. Otherwise the CTE is inlined, the cursor condition included.
      const live = query.status === 'pending' || query.status === 'granted';
      const rows = await tx<ListedRow[]>`
        with matching as ${live ? tx`materialized` : tx`not materialized`} (select * from approvals where true ${filters})
        select ${summaryColumns(tx)},
               to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cursor_at
          from matching
         where true ${before}
         order by created_at desc, id desc
         limit ${limit + 1}`;
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return {
        items: page.map(toSummary),
        nextCursor: rows.length > limit && last !== undefined ? encodeCursor(last.cursor_at, last.id) : null,
      };
    });
  }

  function grant(id: string, approver: { sub: string }, note: string | null): Promise<TransitionResult> {
    return decide(id, approver, note, 'granted');
  }

  function deny(id: string, approver: { sub: string }, reason: string | null): Promise<TransitionResult> {
    return decide(id, approver, reason, 'denied');
  }

  async function decide(
    id: string,
    approver: { sub: string },
    note: string | null,
    to: 'granted' | 'denied',
  ): Promise<TransitionResult> {
    checkName('approver.sub', approver.sub);
    if (note !== null) checkText('note', note, LIMITS.note);
    if (!isUuid(id)) return { ok: false, error: 'not_found' };

    return run(async (tx): Promise<TransitionResult> => {
      // A grant restarts the clock: the agent has GRANT_TTL from now to redeem it.
      const newExpiry = to === 'granted' ? tx`, expires_at = now() + ${grantTtl}::interval` : tx``;
      const [moved] = await tx<ApprovalRow[]>`
        with moved as (
          update approvals
             set status = ${to}, decided_by = ${approver.sub}, decided_at = now(), decision_note = ${note}
                 ${newExpiry}
           where id = ${id} and status = 'pending' and expires_at > now() and requester_sub <> ${approver.sub}
          returning *
        ), logged as (
          insert into approval_events (approval_id, actor, from_status, to_status, note)
          select id, decided_by, 'pending', status, decision_note from moved
        )
        select *, octet_length(args) as args_bytes, false as lapsed, pg_notify(${APPROVALS_CHANNEL}, id::text)::text as notified from moved`;
      // The notification is delivered at COMMIT to every replica's LISTEN connection, never on rollback.
      if (moved !== undefined) return { ok: true, approval: toApproval(moved) };

      // Lost, or never eligible: one read says why.
      const row = await selectById(tx, id);
      if (row === undefined) return { ok: false, error: 'not_found' };
      if (row.requester_sub === approver.sub) return { ok: false, error: 'self_approval' };
      if (row.lapsed) await expireLapsed(tx, tx`id = ${id}`);
      return { ok: false, error: 'conflict', approval: toApproval(row) };
    });
  }

  async function consume(id: string, requester: { sub: string }, hash: string): Promise<ConsumeResult> {
    checkName('requester.sub', requester.sub);
    if (!isUuid(id)) return { ok: false, approval: null };

    return run(async (tx): Promise<ConsumeResult> => {
      // A malformed hash cannot match (and could not even be sent, if it held U+0000): straight to the read.
      const [moved] = !HASH.test(hash) ? [] : await tx<ApprovalRow[]>`
        with moved as (
          update approvals
             set status = 'consumed', consumed_at = now()
           where id = ${id} and status = 'granted' and expires_at > now()
             and requester_sub = ${requester.sub} and hash = ${hash}
          returning *
        ), logged as (
          insert into approval_events (approval_id, actor, from_status, to_status)
          select id, requester_sub, 'granted', 'consumed' from moved
        )
        select *, octet_length(args) as args_bytes, false as lapsed, pg_notify(${APPROVALS_CHANNEL}, id::text)::text as notified from moved`;
      if (moved !== undefined) return { ok: true, approval: toApproval(moved) };

      const row = await selectById(tx, id);
      // Someone else's approval does not exist for this caller (the API answers 404, not 403).
      if (row === undefined || row.requester_sub !== requester.sub) return { ok: false, approval: null };
      if (row.lapsed) await expireLapsed(tx, tx`id = ${id}`);
      return { ok: false, approval: toApproval(row) };
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

  /** Marks every live approval past expires_at as expired; returns how many. For a periodic timer. */
  function sweep(): Promise<number> {
    return run((tx) => expireLapsed(tx, tx`true`));
  }

  async function events(id: string): Promise<ApprovalEvent[]> {
    if (!isUuid(id)) return [];
    return run(async (tx) => {
      const rows = await tx<EventRow[]>`
        select id, approval_id, at, actor, from_status, to_status, note
          from approval_events where approval_id = ${id} order by id`;
      return rows.map((r) => ({
        id: Number(r.id),
        approval_id: r.approval_id,
        at: r.at.toISOString(),
        actor: r.actor,
        from_status: r.from_status,
        to_status: r.to_status,
        note: r.note,
      }));
    });
  }

  return { create, get, list, settled, grant, deny, consume, sweep, events };
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
  return tx`id, status, hash, kind, tool, reason, rule, requester_sub, requester_team, requester_agent,
            created_at, expires_at, decided_by, decided_at, decision_note, consumed_at,
            octet_length(args) as args_bytes, (status in ('pending', 'granted') and expires_at <= now()) as lapsed`;
}

function liveColumns(tx: TransactionSql): PendingQuery<Row[]> {
  return tx`*, octet_length(args) as args_bytes, (status in ('pending', 'granted') and expires_at <= now()) as lapsed`;
}

function selectById(tx: TransactionSql, id: string): Promise<ApprovalRow | undefined> {
  return tx<ApprovalRow[]>`select ${liveColumns(tx)} from approvals where id = ${id}`.then((rows) => rows[0]);
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
  }
}

/**
 * Writes `expired` (with a `system` event and a NOTIFY each) for the live rows past expiry that match
 * `where`; returns how many. FOR UPDATE re-checks each row after any concurrent change, so a row granted
 * or consumed meanwhile is skipped, and from_status is the state actually left. The update finds the
 * locked rows by primary key, one lookup each: written as a join (UPDATE … FROM due), the planner,
 * which believes most rows are past expires_at (the history's are), would hash-join a scan of the
 * whole table.
 */
async function expireLapsed(tx: TransactionSql, where: PendingQuery<Row[]>): Promise<number> {
  const rows = await tx`
    with due as (
      select id, status from approvals
       where status in ('pending', 'granted') and expires_at <= now() and ${where}
       for update
    ), moved as (
      update approvals set status = 'expired' where id = any(array(select id from due))
      returning id
    ), logged as (
      insert into approval_events (approval_id, actor, from_status, to_status)
      select id, 'system', due.status, 'expired' from moved join due using (id)
    )
    select pg_notify(${APPROVALS_CHANNEL}, id::text) from moved`;
  return rows.length;
}

// ---- mapping ---------------------------------------------------------------------------------------

function toSummary(row: SummaryRow): ApprovalSummary {
  return {
    id: row.id,
    status: row.lapsed ? 'expired' : row.status,
    kind: row.kind,
    hash: row.hash,
    tool: row.tool,
    reason: row.reason,
    rule: row.rule,
    requester: { sub: row.requester_sub, team: row.requester_team, agent: row.requester_agent },
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at.toISOString(),
    decided_by: row.decided_by,
    decided_at: row.decided_at?.toISOString() ?? null,
    decision_note: row.decision_note,
    consumed_at: row.consumed_at?.toISOString() ?? null,
    args_bytes: row.args_bytes,
  };
}

function toApproval(row: ApprovalRow): Approval {
  const args = storedObject(row.args);
  const requirements = row.requirements !== null ? storedRequirements(row.requirements, row.tool, args) : [legacyRequirement(row, args)];
  const first = requirements[0]!; // storedRequirements refuses an empty list
  return {
    ...toSummary(row),
    args,
    capability: first.capability,
    presentation: first.presentation,
    requirements,
    policies: row.policies,
  };
}

/**
 * A requirement as stored (migrations/0005): a shape that is the default {tool, args} is left out,
 * so the arguments are stored once, in `args`.
 */
function storedRequirement(r: ApprovalRequirement, tool: string, args: JsonObject): JsonObject {
  const out: JsonObject = { kind: r.kind, policy: r.policy, reason: r.reason, rule: r.rule };
  if (!isDefaultShape(r.capability, tool, args)) out.capability = r.capability;
  if (!isDefaultShape(r.presentation, tool, args)) out.presentation = r.presentation;
  return out;
}

function storedRequirements(text: string, tool: string, args: JsonObject): ApprovalRequirement[] {
  const list = parseJson(text);
  if (!Array.isArray(list) || list.length === 0) throw new Error('stored approval requirements are not a non-empty array');
  return list.map((item: JsonValue): ApprovalRequirement => {
    if (!isJsonObject(item)) throw new Error('a stored approval requirement is not an object');
    const { kind, policy, reason, rule, capability, presentation } = item;
    if (typeof kind !== 'string' || typeof policy !== 'string' || typeof reason !== 'string' || typeof rule !== 'string') {
      throw new Error('a stored approval requirement lacks its names');
    }
    const shape = (v: JsonValue | undefined): JsonObject => {
      if (v === undefined) return { tool, args };
      if (!isJsonObject(v)) throw new Error('a stored approval shape is not an object');
      return v;
    };
    return { policy, rule, kind, reason, capability: shape(capability), presentation: shape(presentation) };
  });
}

/** The one requirement of a row written before migrations/0005, from its own columns. */
function legacyRequirement(row: ApprovalRow, args: JsonObject): ApprovalRequirement {
  if (row.capability === null || row.presentation === null) throw new Error('stored approval has neither requirements nor shapes');
  return {
    // Such a row did not record which file asked; with one file there is no doubt.
    policy: row.policies.length === 1 ? row.policies[0]!.policy : '',
    rule: row.rule,
    kind: row.kind,
    reason: row.reason,
    capability: storedObject(row.capability),
    presentation: storedObject(row.presentation),
  };
}

function storedObject(text: string): JsonObject {
  const value = parseJson(text);
  if (!isJsonObject(value)) throw new Error('stored approval JSON is not an object');
  return value;
}

// ---- cursor: base64url("<created_at to the microsecond, UTC> <id>") ---------------------------------
// The instant goes to PostgreSQL as text (`::text::timestamptz`): a parameter typed timestamptz is
// serialized by postgres.js through a JS Date, which keeps milliseconds only, and the next page would
// then skip every row created in the same millisecond as the last one shown.

const CURSOR = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{3})\d{3}Z ([0-9a-f-]{36})$/;

function encodeCursor(at: string, id: string): string {
  return Buffer.from(`${at} ${id}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): { at: string; id: string } {
  const invalid = new ListQueryError('invalid_cursor', 'cursor', 'cursor is not one this service issued');
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  // Buffer decoding is lenient (it skips stray characters): only our exact encoding is accepted.
  if (Buffer.from(text, 'utf8').toString('base64url') !== cursor) throw invalid;
  const match = CURSOR.exec(text);
  if (match === null) throw invalid;
  const [, seconds = '', millis = '', id = ''] = match;
  if (!isUuid(id)) throw invalid;
  // A real instant (no month 13, no February 30): the millisecond prefix must round-trip.
  const prefix = `${seconds}.${millis}Z`;
  const parsed = new Date(prefix);
  if (Number.isNaN(parsed.getTime()) || parsed.toISOString() !== prefix) throw invalid;
  // Years 0001–9999 only: JS Date accepts year 0000, PostgreSQL's timestamptz does not (SQLSTATE
  // 22008, a 500), and to_char's four-digit YYYY never encodes one.
  if (parsed.getUTCFullYear() < 1) throw invalid;
  return { at: text.slice(0, text.indexOf(' ')), id };
}

// ---- input checks ----------------------------------------------------------------------------------

const HASH = /^sha256:[0-9a-f]{64}$/;

function storable(value: string, max: number): boolean {
  return !value.includes('\u0000') && isWellFormed(value) && [...value].length <= max;
}

// PostgreSQL text cannot hold U+0000, and the CHECKs bound lengths; saying so here turns what would be a
// 500 into a clear input error.
function checkText(field: string, value: string, max: number): void {
  if (value.includes('\u0000')) throw new ApprovalInputError(field, 'contains U+0000');
  if (!isWellFormed(value)) throw new ApprovalInputError(field, 'contains a lone surrogate');
  if ([...value].length > max) throw new ApprovalInputError(field, `longer than ${max} characters`);
}

function checkName(field: string, value: string): void {
  if (value.length === 0) throw new ApprovalInputError(field, 'is empty');
  checkText(field, value, LIMITS.name);
}

function checkRequester(requester: Requester): void {
  checkName('requester.sub', requester.sub);
  if (requester.team !== null) checkName('requester.team', requester.team);
  if (requester.agent !== null) checkName('requester.agent', requester.agent);
}

function positiveMs(ms: number, name: string): number {
  if (!Number.isSafeInteger(ms) || ms <= 0) throw new RangeError(`${name} must be a positive integer (milliseconds)`);
  return ms;
}

/** Milliseconds as the text of an SQL interval (sent as a parameter and cast: `${…}::interval`). */
function interval(ms: number): string {
  return `${ms} milliseconds`;
}
