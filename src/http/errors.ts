// One catalogue of error codes → HTTP status and title, one renderer of RFC 9457 problem+json,
// one error handler. Throw sites pick a code; nothing else decides a status. A 5xx never carries
// the internal message.
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import {
  AmendmentRefusedError,
  ApprovalInputError,
  ApprovalTooLargeError,
  IdempotencyKeyReusedError,
  IdempotencyLimitError,
  ListQueryError,
  NotConfiguredError,
  NotEligibleError,
  OutcomeUnknownError,
  PendingLimitError,
  RecentlyDeniedError,
  StoreUnavailableError,
  WaitLimitError,
} from '../engine/errors.js';
import { JsonParseError } from '../json/parse.js';
import { escapePointerSegment } from '../json/pointer.js';
import { RESPONSE_HEADER_LINES, RESPONSE_HEADERS } from './headers.js';

export const ERRORS = {
  bad_json: { status: 400, title: 'The body is not strict JSON' },
  bad_request: { status: 400, title: 'Bad request' },
  signin_failed: { status: 400, title: 'Sign-in failed' },
  unauthorized: { status: 401, title: 'Missing or invalid bearer token' },
  forbidden: { status: 403, title: 'Forbidden' },
  csrf_rejected: { status: 403, title: 'Missing or wrong CSRF token' },
  not_eligible: { status: 403, title: 'Not eligible to answer this approval' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'Conflict' },
  recently_denied: { status: 409, title: 'The same request was denied recently' },
  body_too_large: { status: 413, title: 'The body is too large' },
  approval_too_large: { status: 413, title: 'The arguments are too large for an approval' },
  uri_too_long: { status: 414, title: 'A path parameter is too long' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  invalid_body: { status: 422, title: 'The body does not match the schema' },
  amendment_refused: { status: 422, title: 'The amended call is not one the policy lets stand' },
  identity_in_body: { status: 422, title: 'Identity comes from the token, not the body' },
  idempotency_key_reused: { status: 422, title: 'The Idempotency-Key was used with another body or identity' },
  usage_unattributable: { status: 422, title: 'The spend cannot be counted' },
  invalid_query: { status: 400, title: 'Invalid query parameters' },
  reload_failed: { status: 422, title: 'The policies did not load' },
  too_many_pending: { status: 429, title: 'Too many pending approvals' },
  too_many_waits: { status: 429, title: 'Too many waits' },
  too_many_idempotency_keys: { status: 429, title: 'Too many Idempotency-Keys kept' },
  internal: { status: 500, title: 'Internal error' },
  unavailable: { status: 503, title: 'A dependency is unavailable' },
  outcome_unknown: { status: 504, title: 'Whether the request took effect is unknown' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERRORS;

export interface FieldError {
  pointer: string;
  message: string;
}

export class HttpError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly extra: { errors?: FieldError[]; retryAfterSec?: number; body?: Record<string, unknown> } = {},
  ) {
    super(detail);
    this.name = 'HttpError';
  }
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  errors?: FieldError[];
  [extra: string]: unknown;
}

export function problemOf(code: ErrorCode, detail: string, errors?: FieldError[]): Problem {
  const { status, title } = ERRORS[code];
  return { type: `urn:gatehouse:problem:${code}`, title, status, detail, code, ...(errors ? { errors } : {}) };
}

export function sendProblem(reply: FastifyReply, err: HttpError): FastifyReply {
  const body = { ...problemOf(err.code, err.detail, err.extra.errors), ...err.extra.body };
  // Also here: the router answers some errors before any hook has run (frameworkErrors).
  reply.headers(RESPONSE_HEADERS);
  if (err.extra.retryAfterSec !== undefined) reply.header('retry-after', String(err.extra.retryAfterSec));
  if (err.code === 'unauthorized') reply.header('www-authenticate', 'Bearer'); // RFC 6750 section 3
  return reply.code(ERRORS[err.code].status).type('application/problem+json').send(body);
}

/** The body fields the approval store is handed as they are (its input errors point at them). */
const BODY_FIELDS: ReadonlySet<string> = new Set(['args', 'note', 'message', 'reason']);

/** The names a body may never use: hosts set identity from the verified token (docs/spec.md section 5). */
export const IDENTITY_FIELDS: ReadonlySet<string> = new Set([
  'user',
  'sub',
  'team',
  'agent',
  'roles',
  'identity',
  'claims',
]);

/** Map anything thrown in a request to a problem. Unknown errors become a 500 with no details. */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof JsonParseError) {
    return new HttpError('bad_json', err.message, { errors: [{ pointer: err.pointer, message: err.code }] });
  }
  if (err instanceof AmendmentRefusedError) {
    // The decision as /decide would state it (never the arguments): what to change before trying again.
    const d = err.decision;
    const decision =
      d === null
        ? null
        : { decision: d.decision, reason: d.reason, rule: d.rule, policies: d.policies, message: d.message };
    return new HttpError('amendment_refused', err.message, { body: { decision } });
  }
  if (err instanceof NotConfiguredError) return new HttpError('unavailable', err.message, { retryAfterSec: 5 });
  if (err instanceof StoreUnavailableError) {
    return new HttpError('unavailable', 'the approval store is unavailable; retry later', { retryAfterSec: 2 });
  }
  if (err instanceof OutcomeUnknownError) {
    // RFC 9110 section 15.6.5: the upstream (PostgreSQL) did not answer in time. Unlike a 503, the
    // request may have taken effect: a retry with the same Idempotency-Key answers what it did.
    return new HttpError(
      'outcome_unknown',
      'the database did not confirm in time whether this request took effect; it may have: retry with the same Idempotency-Key to learn the outcome',
      {
        retryAfterSec: 2,
      },
    );
  }
  if (err instanceof ApprovalTooLargeError) {
    return new HttpError(
      'approval_too_large',
      `an approval holds at most ${err.limit} bytes of canonical arguments (APPROVAL_MAX_BYTES); nothing was stored`,
      {
        body: { limit: err.limit },
      },
    );
  }
  if (err instanceof IdempotencyKeyReusedError) {
    const by =
      err.what === 'body'
        ? 'with another body'
        : "by another identity of the same sub (the token's other claims differ)";
    return new HttpError(
      'idempotency_key_reused',
      `this Idempotency-Key was already used, within 24 hours, ${by}: use a new key for a new request`,
      {
        errors: [{ pointer: '', message: 'idempotency_key_reused' }],
      },
    );
  }
  if (err instanceof IdempotencyLimitError) {
    const setting = err.limit === 'keys' ? 'IDEMPOTENCY_MAX_KEYS' : 'IDEMPOTENCY_MAX_BYTES';
    return new HttpError(
      'too_many_idempotency_keys',
      `you already keep ${err.max} ${err.limit === 'keys' ? 'Idempotency-Keys' : 'bytes of Idempotency-Key answers'} (${setting}); nothing was done. Send the request without a key, or retry once older keys are forgotten (24 hours after their use)`,
      { retryAfterSec: err.retryAfterSec },
    );
  }
  if (err instanceof PendingLimitError) {
    // A place frees up only when an operator decides or an approval expires: minutes, not seconds.
    return new HttpError(
      'too_many_pending',
      `you already have ${err.limit} pending approvals; wait until operators decide some, or they expire`,
      {
        retryAfterSec: 60,
      },
    );
  }
  if (err instanceof NotEligibleError) {
    // The policy's own names (rules, files) and which check failed; never the lists themselves.
    const each = err.requirements.map((r) => `rule ${JSON.stringify(r.rule)} (${r.why.join(', ')})`);
    return new HttpError(
      'not_eligible',
      `you may answer none of this approval's open requirements: ${each.join('; ')}; it stays pending`,
      { body: { requirements: err.requirements.map((r) => ({ rule: r.rule, policy: r.policy, why: r.why })) } },
    );
  }
  if (err instanceof RecentlyDeniedError) {
    return new HttpError(
      'recently_denied',
      'an operator denied this same request recently; it cannot be filed again until the cooldown ends (DENIED_COOLDOWN)',
      {
        retryAfterSec: err.retryAfterSec,
        // The requester is told the denial and its message, never the operators' note.
        body: { approval: { ...err.denial, decision_note: null } },
      },
    );
  }
  if (err instanceof WaitLimitError && err.what === 'streams') {
    return err.scope === 'caller'
      ? new HttpError(
          'too_many_waits',
          `you already hold ${err.limit} streams (MAX_WAITS_PER_CALLER); close one first`,
          { retryAfterSec: 5 },
        )
      : new HttpError('unavailable', 'this replica holds as many streams as it may (MAX_WAITS); retry', {
          retryAfterSec: 5,
        });
  }
  if (err instanceof WaitLimitError) {
    return err.scope === 'caller'
      ? new HttpError(
          'too_many_waits',
          `you already hold ${err.limit} waits (MAX_WAITS_PER_CALLER); wait on fewer approvals at once`,
          { retryAfterSec: 5 },
        )
      : new HttpError(
          'unavailable',
          'this replica holds as many waits as it may (MAX_WAITS); retry, or poll without wait',
          { retryAfterSec: 5 },
        );
  }
  // The store refused a value from the token's claims. Authentication refuses every claim the store
  // would (auth.ts), so this is a safety net: the token's fault, never a 500 or a body error.
  if ((err instanceof ApprovalInputError || err instanceof ListQueryError) && err.fromToken) {
    return new HttpError('unauthorized', "the token's identity claims cannot be used");
  }
  // A value of the body the database cannot hold (too long, U+0000): the caller's 422, pointing at
  // the body field when it is one (`args`, a grant's `note`, a denial's `reason`).
  if (err instanceof ApprovalInputError) {
    const pointer = BODY_FIELDS.has(err.field) ? `/${err.field}` : '';
    return new HttpError('invalid_body', `${err.field} cannot be stored`, {
      errors: [{ pointer, message: 'cannot be stored' }],
    });
  }
  // A list filter the store refused: 400 pointing at the query parameter at fault.
  if (err instanceof ListQueryError) {
    return new HttpError('invalid_query', err.message, { errors: [{ pointer: `/${err.field}`, message: err.code }] });
  }
  const e = err as Partial<FastifyError>;
  if (Array.isArray(e.validation)) return validationError(e as FastifyError);
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new HttpError('body_too_large', 'the body is larger than BODY_LIMIT');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new HttpError('unsupported_media_type', 'send application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new HttpError('bad_json', 'the body is empty');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new HttpError('bad_request', 'Content-Length does not match the body');
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_ASYNC_CONSTRAINT':
      return new HttpError('bad_request', 'the request URL is not valid');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new HttpError('uri_too_long', 'a path parameter is longer than 128 characters');
  }
  if (typeof e.code === 'string' && e.code.startsWith('FST_JWT_'))
    return new HttpError('unauthorized', jwtDetail(e.code));
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    if (e.statusCode === 404) return new HttpError('not_found', 'no such resource');
    if (e.statusCode === 405) return new HttpError('method_not_allowed', 'method not allowed');
    if (e.statusCode === 408) return new HttpError('bad_request', 'the request timed out');
    if (e.statusCode === 413) return new HttpError('body_too_large', 'the body is larger than BODY_LIMIT');
    if (e.statusCode === 415) return new HttpError('unsupported_media_type', 'send application/json');
    return new HttpError('bad_request', 'the request is not valid');
  }
  return new HttpError('internal', 'an internal error occurred; nothing was allowed');
}

function jwtDetail(code: string): string {
  if (code === 'FST_JWT_NO_AUTHORIZATION_IN_HEADER') return 'send Authorization: Bearer <token>';
  if (code === 'FST_JWT_AUTHORIZATION_TOKEN_EXPIRED') return 'the token has expired';
  if (code === 'FST_JWT_BAD_REQUEST') return 'the Authorization header is not a bearer token';
  return 'the token is not valid';
}

function validationError(err: FastifyError): HttpError {
  const where = err.validationContext ?? 'body';
  const errors: FieldError[] = [];
  let identity: string | null = null;
  for (const v of err.validation ?? []) {
    let pointer = v.instancePath;
    // A member the rest of the body rules out (POST /inspect's `content` on the result stage).
    let message = v.keyword === 'false schema' ? 'not allowed here' : (v.message ?? `fails ${v.keyword}`);
    if (v.keyword === 'additionalProperties') {
      const name = String((v.params as { additionalProperty?: unknown }).additionalProperty);
      pointer = `${v.instancePath}/${escapePointerSegment(name)}`;
      message = 'unknown field';
      if (v.instancePath === '' && where === 'body' && IDENTITY_FIELDS.has(name)) identity = name;
    }
    errors.push({ pointer, message });
  }
  if (identity !== null) {
    return new HttpError('identity_in_body', `the body may not set "${identity}": identity comes from the token`, {
      errors,
    });
  }
  if (where === 'querystring' || where === 'params')
    return new HttpError('invalid_query', `invalid ${where}`, { errors });
  return new HttpError('invalid_body', 'the body does not match the schema of this route', { errors });
}

/**
 * Node's HTTP parser refuses some requests before Fastify sees them (two Content-Lengths, Content-Length
 * with chunked, a body cut short, a bad header line): answer those as problem+json too, then close.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // A connection that sent nothing before HEADERS_TIMEOUT (a load balancer's spare one, a scanner)
  // has no request to answer: close it as an idle one, without an unsolicited response (RFC 9112
  // section 9.5). One that sent part of a request is told why.
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' && (socket as Duplex & { bytesRead?: number }).bytesRead === 0) {
    socket.destroy();
    return;
  }
  // One catalogue: these are all `bad_request` (as toHttpError maps a 408), with a detail saying which.
  const detail =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? 'the request was not received in time'
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? 'the request headers are too large'
        : 'the request is not valid HTTP/1.1';
  const { status } = ERRORS.bad_request;
  const body = JSON.stringify(problemOf('bad_request', detail));
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json; charset=utf-8\r\n${RESPONSE_HEADER_LINES}` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err, request, reply) => {
    const httpError = toHttpError(err);
    const status = ERRORS[httpError.code].status;
    if (status >= 500) request.log.error({ err, code: httpError.code }, 'request failed');
    return sendProblem(reply, httpError);
  });
  app.setNotFoundHandler((_request, reply) => sendProblem(reply, new HttpError('not_found', 'no such route')));
}
