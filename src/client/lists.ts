// The lists beside the approvals' (spec section 5.9): the decision store's records (GET /decisions,
// auditors and admins) and where the caller stands in its budgets and rate limits (GET /budgets).
// Each query option is the query parameter of the same name; answers come back through ./wire.ts,
// and one that is not the list asked for is a GatehouseError.
import { passed } from './api.js';
import { GatehouseError, type Transport } from './http.js';
import type { BudgetsQuery, BudgetsResponse, DecisionPage, DecisionQuery, RequestOptions } from './types.js';
import { BUDGETS_QUERY, BUDGETS_RESPONSE, DECISION_PAGE, DECISION_QUERY, fromWire, queryOf } from './wire.js';

export function listRoutes(t: Transport) {
  return {
    /** GET /decisions: a page of recorded decisions, newest first (404 when the service records none). */
    async decisions(q: DecisionQuery = {}, o: RequestOptions = {}): Promise<DecisionPage> {
      const body = (await t.request('GET', `/decisions${queryOf(DECISION_QUERY, q)}`, passed(o))).body;
      if (!Array.isArray((body as { items?: unknown } | undefined)?.items))
        throw new GatehouseError('Gatehouse answered GET /decisions without a list', 200, 'bad_answer', body);
      return fromWire<DecisionPage>(DECISION_PAGE, body);
    },

    /** GET /budgets: every budget and rate limit that can apply to the caller, with its counters. */
    async budgets(q: BudgetsQuery = {}, o: RequestOptions = {}): Promise<BudgetsResponse> {
      const body = (await t.request('GET', `/budgets${queryOf(BUDGETS_QUERY, q)}`, passed(o))).body;
      if (!Array.isArray((body as { limits?: unknown } | undefined)?.limits))
        throw new GatehouseError('Gatehouse answered GET /budgets without a list of limits', 200, 'bad_answer', body);
      return fromWire<BudgetsResponse>(BUDGETS_RESPONSE, body);
    },
  };
}
