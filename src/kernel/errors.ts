// The refusals that belong to no one store: a list query the caller got wrong (approvals and decision
// records page the same way: ./cursor.ts). src/engine/errors.ts names them for the HTTP table.

/** A list() query the caller got wrong: the route answers 400, pointing at `field`. */
export class ListQueryError extends Error {
  readonly code: 'invalid_cursor' | 'invalid_limit' | 'invalid_status' | 'invalid_filter';
  /** The ListQuery member at fault (named as its query parameter, but for requesterSub). */
  readonly field: 'cursor' | 'limit' | 'status' | 'tool' | 'kind' | 'requester' | 'q' | 'requesterSub';
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
