// What the adapters' tests share: a real Gatehouse (real PostgreSQL) on a loopback port serving the
// adapters' fixture policy (an allowed, a denied, an aborting and an approval tool), clients for an
// agent and an operator, and a look at the approvals a run filed.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type ApprovalSummary,
  type ClientOptions,
  createClient,
  type GatehouseClient,
} from '../../src/client/index.js';
import { agentToken, approverToken, createTestApp, type TestApp } from '../helpers/app.js';
import { listenLoopback } from '../helpers/http.js';

export const POLICY_DIR = 'test/fixtures/policies/adapters';

export interface Gatehouse {
  url: string;
  /** A client of the agent (its own sub per fixture, so no two test files meet each other's approvals). */
  agent(options?: Partial<ClientOptions>): GatehouseClient;
  /** A client of an operator (approver role): grants and denies over REST. */
  operator: GatehouseClient;
  /** Every approval filed with this run id, oldest first. */
  approvalsOf(runId: string): Promise<ApprovalSummary[]>;
  /** Makes an approval lapse now, by the database clock (as APPROVAL_TTL or GRANT_TTL running out would). */
  expire(id: string): Promise<void>;
  tempDir(): Promise<string>;
  close(): Promise<void>;
}

export async function startGatehouse(): Promise<Gatehouse> {
  const t: TestApp = await createTestApp({ policyDir: POLICY_DIR, env: null, database: true });
  const url = `http://127.0.0.1:${await listenLoopback(t.app)}`;
  const token = agentToken(`agent-${randomUUID().slice(0, 8)}`);
  const operator = createClient({ url, token: approverToken('operator-1') });
  const dirs: string[] = [];
  return {
    url,
    agent: (options = {}) => createClient({ url, token, ...options }),
    operator,
    async approvalsOf(runId) {
      const all: ApprovalSummary[] = [];
      for (let cursor: string | undefined; ; ) {
        const page = await operator.approvals.list({ limit: 200, ...(cursor !== undefined ? { cursor } : {}) });
        all.push(...page.items.filter((a) => a.runId === runId));
        if (page.nextCursor === null) return all.reverse();
        cursor = page.nextCursor;
      }
    },
    async expire(id) {
      await t.db!.sql`update approvals set expires_at = now() - interval '1 second' where id = ${id}`;
    },
    async tempDir() {
      const dir = await mkdtemp(join(tmpdir(), 'gatehouse-adapters-'));
      dirs.push(dir);
      return dir;
    },
    async close() {
      await t.close();
      await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
    },
  };
}

/** Resolves when `onPending` is first called, with what it was called with. */
export function firstPending<T>(): { onPending: (p: T) => void; seen: Promise<T> } {
  let resolve!: (p: T) => void;
  const seen = new Promise<T>((r) => (resolve = r));
  return { onPending: (p) => resolve(p), seen };
}

export const newRunId = (): string => `run-${randomUUID()}`;

/** What gate() tells the model when the approval of `tool` (the fixture's refund rule) expired unanswered. */
export const expiredMessage = (tool: string): string =>
  `The "${tool}" action was not run: it needs an operator's approval (refund over 100 needs an operator), and the approval requested for it expired before an operator answered. Tell the user; if the action is still wanted, make the same call again to request a new approval.`;

/** A fetch that loses the answer of the first redeem (POST /decide citing an approval) after the server acted. */
export function loseFirstRedeemAnswer(): { fetch: typeof fetch; lost: () => number } {
  let lost = 0;
  return {
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      if (lost === 0 && typeof init?.body === 'string' && init.body.includes('"approval_id"')) {
        lost++;
        throw new TypeError('fetch failed: the connection was reset');
      }
      return res;
    },
    lost: () => lost,
  };
}
