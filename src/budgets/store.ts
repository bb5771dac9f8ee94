// The counters of budgets and rate limits (migrations/0012_budgets.sql, docs/spec.md section 2.9): every
// read and change of them. What holds throughout:
// - Counting a call is ONE conditional statement per counter: an upsert that adds the call only while
//   the result stays within the limit (`… on conflict do update … where counted + amount <= max`).
//   PostgreSQL locks the row for the statement, so concurrent calls on any number of replicas are
//   counted one after another, each against the row as the last one left it: exactly, never a read
//   followed by a write. A refused call changes nothing (its counter stays locked until the end of
//   the transaction, so a redeemed grant can still count it over the limit in the same transaction).
// - Windows and times are the database's clock (clock_timestamp(), read once per statement, after the
//   row is locked for a rate limit's times): every replica counts in the same windows.
// - The caller passes the transaction (src/budgets/service.ts runs it under DB_DEADLINE_MS): several
//   counters of one call, and the approval a grant redeems, commit together or not at all. Counters
//   are changed in one fixed order (budgets, then rate limits, each by id), so two calls that share
//   counters never wait for each other in a cycle.
import type { PendingQuery, Row, Sql, TransactionSql } from 'postgres';
import { IN_TRANSACTION } from '../db/lanes.js';
import { amountOfText } from '../policy/amount.js';
import { wouldCross, type Refusal, type Standing } from '../policy/limits.js';
import {
  CALENDAR_UNITS,
  type Amount,
  type Budget,
  type BudgetWindow,
  type Charge,
  type Limit,
  type RateLimit,
} from '../policy/model.js';

/** Where each charge's counter stands after checking or counting, and the charges the call would cross. */
export interface ChargeOutcome {
  readonly refusals: Refusal[];
  /** Per charge (the same objects), its standing: after counting when it was counted, else as read. Absent: undecidable. */
  readonly standings: Map<Charge, Standing>;
}

/** A counter as GET /budgets shows it. */
export interface CounterRow {
  readonly key: string;
  readonly standing: Standing;
}

/** The sweep's rows-per-statement: short statements, and a table that stays small. */
const SWEEP_BATCH = 10_000;

/**
 * Budgets before rate limits, each by id, then by counter: the one order every transaction locks
 * counters in (the lanes' transactions of several calls too: src/budgets/service.ts).
 */
export function lockOrder(charges: readonly Charge[]): Charge[] {
  const key = (c: Charge): string => `${c.limit.type === 'budget' ? 0 : 1}\n${c.limit.id}\n${c.key ?? ''}`;
  return [...charges].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

export function createCounterStore() {
  /** Read-only: whether the call would fit in each counter, from where they stand now. Counts nothing. */
  async function check(tx: TransactionSql, charges: readonly Charge[]): Promise<ChargeOutcome> {
    const refusals: Refusal[] = [];
    const standings = new Map<Charge, Standing>();
    for (const charge of lockOrder(charges)) {
      if (charge.key === null || charge.amount === null) {
        refusals.push({ charge, standing: null });
        continue;
      }
      const standing = await read(tx, charge.limit, charge.key);
      standings.set(charge, standing);
      if (wouldCross(charge, standing.counted)) refusals.push({ charge, standing });
    }
    return { refusals, standings };
  }

  /**
   * Counts the call in every counter it fits in, one conditional statement each; the ones it would
   * cross (or cannot be counted in) come back as refusals, counting nothing. All or nothing is the
   * caller's: when any is refused, the transaction must not commit the others (src/engine/limits.ts).
   */
  async function charge(tx: TransactionSql, charges: readonly Charge[]): Promise<ChargeOutcome> {
    const refusals: Refusal[] = [];
    const standings = new Map<Charge, Standing>();
    for (const c of lockOrder(charges)) {
      if (c.key === null || c.amount === null) {
        refusals.push({ charge: c, standing: null });
        continue;
      }
      const { limit } = c;
      // Reported spend is counted by POST /usage; a call only reads it.
      const counted =
        limit.type === 'rate_limit'
          ? await countCall(tx, limit, c.key)
          : 'usd' in limit.measure
            ? null
            : await addToBudget(tx, limit, c.key, c.amount);
      if (counted !== null) {
        standings.set(c, counted);
        continue;
      }
      const standing = await read(tx, limit, c.key);
      standings.set(c, standing);
      // A `max_usd` budget read; the others were refused by their statement.
      if (limit.type === 'budget' && 'usd' in limit.measure && !wouldCross(c, standing.counted)) continue;
      refusals.push({ charge: c, standing });
    }
    return { refusals, standings };
  }

  /**
   * Counts calls whatever their counters say: an operator granted them past their limit and the grant
   * was redeemed (docs/spec.md section 2.9). One unconditional statement each; an undecidable
   * charge, and a `max_usd` budget (which counts spend, not calls), count nothing.
   */
  async function force(tx: TransactionSql, charges: readonly Charge[]): Promise<void> {
    for (const c of lockOrder(charges)) {
      if (c.key === null || c.amount === null) continue;
      const { limit } = c;
      if (limit.type === 'rate_limit') await countCall(tx, limit, c.key, true);
      else if (!('usd' in limit.measure)) await addToBudget(tx, limit, c.key, c.amount, true);
    }
  }

  /** POST /usage: adds reported spend to `max_usd` budgets (unconditionally: it was spent). Returns each counter after. */
  async function record(tx: TransactionSql, charges: readonly Charge[], usd: Amount): Promise<Map<Charge, Standing>> {
    const out = new Map<Charge, Standing>();
    for (const c of lockOrder(charges)) {
      if (c.key === null || c.limit.type !== 'budget') continue;
      const after = await addToBudget(tx, c.limit, c.key, usd, true);
      if (after !== null) out.set(c, after);
    }
    return out;
  }

  /** Where one counter stands now (a budget's current window; a rate limit's last `per`). */
  async function read(tx: TransactionSql, limit: Limit, key: string): Promise<Standing> {
    if (limit.type === 'rate_limit') {
      const [row] = await tx<RateRow[]>`
        with c as (select clock_timestamp() as t)
        select ${rateColumns(tx, limit)}
          from c left join rate_limit_calls r on r.rate_limit = ${limit.id} and r.scope_key = ${key}`;
      return rateStanding(row!);
    }
    const [row] = await tx<BudgetRow[]>`
      with w as (${windowOf(tx, limit.per)})
      select coalesce(b.counted, 0)::text as counted, w.s as window_start, w.e as window_end
        from w left join budget_counters b
          on b.budget = ${limit.id} and b.scope_key = ${key} and b.window_start = w.s and b.window_end = w.e`;
    return budgetStanding(row!);
  }

  /** Every counter of a limit in its current window, the fullest first (GET /budgets for admins); at most `limit` rows. */
  async function list(tx: TransactionSql, limit: Limit, max: number): Promise<{ rows: CounterRow[]; more: boolean }> {
    if (limit.type === 'rate_limit') {
      const rows = await tx<(RateRow & { key: string })[]>`
        with c as (select clock_timestamp() as t)
        select r.scope_key as key, ${rateColumns(tx, limit)}
          from c join rate_limit_calls r on r.rate_limit = ${limit.id} and r.expires_at > c.t
         order by in_window desc, r.scope_key limit ${max + 1}`;
      return {
        rows: rows.slice(0, max).map((r) => ({ key: r.key, standing: rateStanding(r) })),
        more: rows.length > max,
      };
    }
    const rows = await tx<(BudgetRow & { key: string })[]>`
      with w as (${windowOf(tx, limit.per)})
      select b.scope_key as key, b.counted::text as counted, w.s as window_start, w.e as window_end
        from w join budget_counters b on b.budget = ${limit.id} and b.window_start = w.s and b.window_end = w.e
       order by b.counted desc, b.scope_key limit ${max + 1}`;
    return {
      rows: rows.slice(0, max).map((r) => ({ key: r.key, standing: budgetStanding(r) })),
      more: rows.length > max,
    };
  }

  /** The run counters of one caller for a run-scoped limit (their keys start with the caller's sub). */
  async function runKeys(tx: TransactionSql, limit: Limit, sub: string): Promise<string[]> {
    const prefix = `run:${sub}\n`;
    const rows =
      limit.type === 'rate_limit'
        ? await tx<{ key: string }[]>`
            select scope_key as key from rate_limit_calls
             where rate_limit = ${limit.id} and left(scope_key, ${prefix.length}) = ${prefix} and expires_at > clock_timestamp()
             order by scope_key limit 100`
        : await tx<{ key: string }[]>`
            with w as (${windowOf(tx, limit.per)})
            select b.scope_key as key from w join budget_counters b
                on b.budget = ${limit.id} and b.window_start = w.s and b.window_end = w.e and left(b.scope_key, ${prefix.length}) = ${prefix}
             order by b.scope_key limit 100`;
    return rows.map((r) => r.key);
  }

  /** Deletes counters of ended windows and rate limits with no call in their window; returns how many. */
  async function sweep(tx: TransactionSql): Promise<number> {
    const budgets = await tx`
      delete from budget_counters where ctid = any(array(
        select ctid from budget_counters where window_end <= now() limit ${SWEEP_BATCH}))`;
    const rates = await tx`
      delete from rate_limit_calls where ctid = any(array(
        select ctid from rate_limit_calls where expires_at <= now() limit ${SWEEP_BATCH}))`;
    return budgets.count + rates.count;
  }

  /**
   * The one conditional statement that counts a call in one counter, for Lanes.transaction
   * (src/db/lanes.ts): guarded, it changes nothing outside the transaction that opens. Null
   * when the charge is not counted by a statement (undecidable, or a `max_usd` budget, which reads).
   */
  function countStatement(c: Sql, charge: Charge): PendingQuery<Row[]> | null {
    if (!countedByStatement(charge) || charge.key === null || charge.amount === null) return null;
    const { limit } = charge;
    if (limit.type === 'rate_limit') return countCallStatement(c, limit, charge.key, false, true);
    if ('usd' in limit.measure) return null;
    return addToBudgetStatement(c, limit, charge.key, charge.amount, false, true);
  }

  return { check, charge, force, record, read, list, runKeys, sweep, countStatement, countedByStatement };
}

/** Whether counting the charge is one statement (countStatement): decidable, and not a `max_usd` budget, which is read. */
export function countedByStatement(charge: Charge): boolean {
  return (
    charge.key !== null && charge.amount !== null && !(charge.limit.type === 'budget' && 'usd' in charge.limit.measure)
  );
}

/** A counted statement's one row as the counter it left (after countStatement ran): the standing, or null when refused. */
export function standingOfCount(limit: Limit, rows: readonly Row[]): Standing | null {
  const [row] = rows;
  if (row === undefined) return null;
  return limit.type === 'rate_limit' ? rateStanding(row as RateRow) : budgetStanding(row as BudgetRow);
}

export type CounterStore = ReturnType<typeof createCounterStore>;

// ---- SQL pieces --------------------------------------------------------------------------------------

interface BudgetRow {
  counted: string;
  window_start: Date;
  window_end: Date;
}

interface RateRow {
  in_window: number;
  window_start: Date;
  window_end: Date;
  frees_at: Date | null;
}

/**
 * One window row `(s, e)` holding the database's time now, as SQL text: a UTC calendar unit
 * (computed on UTC wall time, so the session's TimeZone and its daylight saving change nothing), or
 * a fixed length counted from the Unix epoch. The time is read once, so s and e never straddle a
 * boundary. The unit (one of five names) and the length (a whole number of seconds) are written
 * into the text, checked here: a statement built on it is one postgres.js query with plain
 * parameters, not a tree of fragments, which on a counted /decide cost more CPU and garbage than
 * the statement's round trip (docs/performance.md).
 */
function windowText(per: BudgetWindow): string {
  if ('calendar' in per) {
    if (!CALENDAR_UNITS.has(per.calendar)) throw new Error('a budget window is not a calendar unit');
    return `select u.start at time zone 'UTC' as s, (u.start + interval '1 ${per.calendar}') at time zone 'UTC' as e
      from (select date_trunc('${per.calendar}', clock_timestamp() at time zone 'UTC') as start) u`;
  }
  if (!Number.isSafeInteger(per.seconds) || per.seconds <= 0)
    throw new Error('a budget window is not a whole number of seconds');
  return `select u.start as s, u.start + ${per.seconds} * interval '1 second' as e
      from (select to_timestamp(floor(extract(epoch from clock_timestamp()) / ${per.seconds}) * ${per.seconds}) as start) u`;
}

function windowOf(tx: Sql | TransactionSql, per: BudgetWindow): PendingQuery<Row[]> {
  return tx.unsafe(windowText(per)) as unknown as PendingQuery<Row[]>; // SQL text of ours, without parameters
}

/**
 * Adds the amount to the budget's counter of the current window: only while the result stays within
 * `max` (unless `force`). Returns the counter after, or null when it was refused.
 */
async function addToBudget(
  tx: TransactionSql,
  budget: Budget,
  key: string,
  amount: Amount,
  force = false,
): Promise<Standing | null> {
  const [row] = await addToBudgetStatement(tx, budget, key, amount, force, false);
  return row === undefined ? null : budgetStanding(row as BudgetRow);
}

/** `guarded`: it changes nothing outside a transaction Lanes opened (IN_TRANSACTION). */
function addToBudgetStatement(
  tx: Sql | TransactionSql,
  budget: Budget,
  key: string,
  amount: Amount,
  force: boolean,
  guarded: boolean,
): PendingQuery<Row[]> {
  let texts = budgetTexts.get(budget);
  if (texts === undefined) budgetTexts.set(budget, (texts = []));
  const text = (texts[textIndex(force, guarded)] ??= budgetText(budget, force, guarded));
  const parameters = [budget.id, key, amount.text, ...(force ? [] : [budget.max.text])];
  return tx.unsafe(text, parameters, { prepare: true }) as unknown as PendingQuery<Row[]>;
}

/**
 * The statements' SQL texts, by force and guard, made once each: a budget's (its window is in the
 * text) on first use, a rate limit's (the same for all: window and calls are parameters) at load.
 * A text made for every call would be garbage that every call leaves behind.
 */
const textIndex = (force: boolean, guarded: boolean): number => (force ? 2 : 0) + (guarded ? 1 : 0);
const budgetTexts = new WeakMap<Budget, string[]>();

function budgetText(budget: Budget, force: boolean, guarded: boolean): string {
  const guard = guarded ? IN_TRANSACTION : 'true';
  const within = (counted: string): string => (force ? guard : `${guard} and ${counted} <= $4::numeric`);
  return `
    with w as (${windowText(budget.per)})
    insert into budget_counters as b (budget, scope_key, window_start, window_end, counted, calls)
    select $1, $2, w.s, w.e, $3::numeric, 1 from w
     where ${within('$3::numeric')}
    on conflict (budget, scope_key, window_start, window_end) do update
       set counted = b.counted + excluded.counted, calls = b.calls + 1
     where ${within('b.counted + excluded.counted')}
    returning b.counted::text as counted, b.window_start, b.window_end`;
}

/**
 * Records a call in the rate limit's counter: only while fewer than `calls` of its kept times are
 * within `per` of now (unless `force`), keeping the last `calls` times. The times are read after
 * the row is locked, so they grow in commit order. Returns the counter after, or null when refused.
 */
async function countCall(tx: TransactionSql, limit: RateLimit, key: string, force = false): Promise<Standing | null> {
  const [row] = await countCallStatement(tx, limit, key, force, false);
  return row === undefined ? null : rateStanding(row as RateRow);
}

/** `guarded`: as addToBudgetStatement. */
function countCallStatement(
  tx: Sql | TransactionSql,
  limit: RateLimit,
  key: string,
  force: boolean,
  guarded: boolean,
): PendingQuery<Row[]> {
  const parameters = [limit.id, key, limit.perSeconds, limit.calls];
  return tx.unsafe(RATE_LIMIT_TEXTS[textIndex(force, guarded)]!, parameters, {
    prepare: true,
  }) as unknown as PendingQuery<Row[]>; // one of four
}

/** $1 the rate limit, $2 the counter, $3 the window in seconds, $4 the calls it allows. */
function rateLimitText(force: boolean, guarded: boolean): string {
  const guard = guarded ? IN_TRANSACTION : 'true';
  const per = `$3::integer * interval '1 second'`;
  const fits = force
    ? guard
    : `${guard} and (cardinality(r.times) < $4::integer or r.times[cardinality(r.times) - $4::integer + 1] <= clock_timestamp() - ${per})`;
  return `
    insert into rate_limit_calls as r (rate_limit, scope_key, times, expires_at)
    select $1, $2, array[clock_timestamp()], clock_timestamp() + ${per} where ${guard}
    on conflict (rate_limit, scope_key) do update
       set times = (r.times || clock_timestamp())[greatest(1, cardinality(r.times) + 2 - $4::integer):],
           expires_at = clock_timestamp() + ${per}
     where ${fits}
    returning (select count(*)::int from unnest(r.times) t where t > clock_timestamp() - ${per}) as in_window,
              clock_timestamp() - ${per} as window_start, clock_timestamp() as window_end, null::timestamptz as frees_at`;
}

const RATE_LIMIT_TEXTS = [false, true].flatMap((force) =>
  [false, true].map((guarded) => rateLimitText(force, guarded)),
); // in textIndex's order

/** A rate limit counter's columns as RateRow, with `c.t` the time now and `r` the row (or nulls). */
function rateColumns(tx: TransactionSql, limit: RateLimit): PendingQuery<Row[]> {
  const per = tx`${limit.perSeconds}::integer * interval '1 second'`;
  const calls = limit.calls;
  return tx`
    coalesce((select count(*)::int from unnest(r.times) t where t > c.t - ${per}), 0) as in_window,
    c.t - ${per} as window_start, c.t as window_end,
    case when cardinality(r.times) >= ${calls}::integer and r.times[cardinality(r.times) - ${calls}::integer + 1] > c.t - ${per}
         then r.times[cardinality(r.times) - ${calls}::integer + 1] + ${per} end as frees_at`;
}

function budgetStanding(row: BudgetRow): Standing {
  const counted = amountOfText(row.counted);
  if (counted === null) throw new Error('a budget counter is not a non-negative number');
  return { counted, windowStart: row.window_start.toISOString(), windowEnd: row.window_end.toISOString() };
}

function rateStanding(row: RateRow): Standing {
  const counted = amountOfText(String(row.in_window));
  if (counted === null) throw new Error('a rate limit counter is not a count');
  return {
    counted,
    windowStart: row.window_start.toISOString(),
    windowEnd: row.window_end.toISOString(),
    ...(row.frees_at !== null ? { freesAt: row.frees_at.toISOString() } : {}),
  };
}
