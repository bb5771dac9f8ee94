// @ts-check
// The request bodies and tokens every benchmark uses, so all of them measure the same thing.
import { createHmac } from 'node:crypto';

/** The HS256 secret of the benchmark servers (never used anywhere else). */
export const SECRET = 'gatehouse-bench-secret-0123456789abcdef-0123456789';

/**
 * A ~300-byte /decide body over the example policies (policies/payments.yaml, env prod): a refund
 * under the confirm cap by team `support`, so the answer is 200 allow from rule refund-support,
 * after the tool's argument schema ran, the `confirm` condition was evaluated and the run's steps
 * were counted against max_calls.
 */
/** @type {{ tool: string, args: import('../../dist/json/value.js').JsonObject, run: import('../../dist/policy/model.js').RunView }} */
export const DECIDE_BODY = {
  tool: 'refund',
  args: {
    order: 'A-2024-000123',
    amount: 80,
    note: 'Parcel arrived damaged; refund the item and shipping, no return needed.',
  },
  run: {
    id: 'run-7f3c2a9e-5b1d-4c8e-9a0f-1e2d3c4b5a69',
    steps: [
      { tool: 'lookup_order', decision: 'allow' },
      { tool: 'lookup_customer', decision: 'allow' },
    ],
  },
};
export const DECIDE_TEXT = JSON.stringify(DECIDE_BODY);

/** A ~100 KB body: the same shape with a long list of order lines in args. */
export function largeBody(targetBytes = 100 * 1024) {
  /** @type {Record<string, unknown>[]} */
  const items = [];
  const body = { tool: 'bulk_refund', args: { order: 'A-2024-000123', items }, run: DECIDE_BODY.run };
  let k = 0;
  while (JSON.stringify(body).length < targetBytes) {
    items.push({
      sku: `SKU-${100000 + k}`,
      qty: (k % 5) + 1,
      price: 12.5 + (k % 17),
      title: `Item number ${k} \u00e9t\u00e9 edition`,
      gift: k % 3 === 0,
    });
    k++;
  }
  return body;
}

const b64url = (/** @type {string | Buffer} */ data) => Buffer.from(data).toString('base64url');

/** A compact HS256 JWT for SECRET (like test/helpers/app.ts). */
export function signToken(claims = {}, secret = SECRET) {
  const now = Math.floor(Date.now() / 1000);
  const payload = {
    sub: 'agent-1',
    team: 'support',
    agent: 'support-bot',
    roles: [],
    iat: now,
    exp: now + 4 * 3600,
    ...claims,
  };
  const input = `${b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64url(JSON.stringify(payload))}`;
  return `${input}.${b64url(createHmac('sha256', secret).update(input).digest())}`;
}

/** The identity decide() sees for signToken()'s default claims. */
export const IDENTITY = { user: 'agent-1', team: 'support', agent: 'support-bot', roles: [] };
