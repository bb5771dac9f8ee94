// The JSON Schemas of what a caller sends about a tool call, shared by the HTTP bodies, the policy
// test files and the CLI, so all of them refuse exactly the same requests.

import { numberLexeme, setNumberLexeme, type JsonObject, type JsonValue } from '../json/value.js';
import type { InspectRequest } from './inspect.js';
import type { DecideRequest, RunView } from './model.js';

/**
 * A `.` or `..` path segment: between `/` separators, or after the last one. A tool that maps its name
 * to a path or a route (an MCP server, a URL) may resolve `lookup_/../wipe_orders` to `wipe_orders`,
 * while a glob such as `lookup_*` matches it as written (RFC 3986 section 5.2.4 removes such segments).
 * Other dots (`github.get_issue`, `v1.2`, `a/.b`, `a/...`) are ordinary characters.
 */
const DOT_SEGMENT = '(?:^|/)\\.\\.?(?:/|$)';

/**
 * Tool names: ASCII letters, digits and `_ . : / -`, at most 128, and no `.` or `..` path segment.
 * Anything else (spaces, Unicode look-alikes, control or zero-width characters) is refused rather than
 * normalised, so no variant of a denied name can slip past an exact-name rule. The length is checked
 * first, so the segment search never scans past 128 characters of a long string.
 */
export const TOOL_NAME_PATTERN = `^(?=.{1,128}$)(?!.*${DOT_SEGMENT})[A-Za-z0-9_][A-Za-z0-9_.:/-]{0,127}$`;

const DOT_SEGMENT_RE = new RegExp(DOT_SEGMENT);

/** Whether a tool name (or a glob, read literally) has a `.` or `..` path segment. */
export function hasDotSegment(name: string): boolean {
  return DOT_SEGMENT_RE.test(name);
}

export const toolNameSchema = { type: 'string', pattern: TOOL_NAME_PATTERN } as const;

export const argsSchema = { type: 'object' } as const;

const decisionEnum = { enum: ['allow', 'deny', 'abort', 'require_approval'] } as const;

/** The run view: what the host's runtime has recorded of this run so far (docs/spec.md section 5). */
export const runViewSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 256 },
    steps: {
      type: 'array',
      maxItems: 10_000, // each step is an object, and a body holds at most 10,000 keys (src/http/body.ts)
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['tool'],
        properties: {
          tool: { type: 'string', maxLength: 256 },
          decision: decisionEnum,
          approval_id: { type: 'string', maxLength: 64 },
        },
      },
    },
    approvals: {
      type: 'array',
      maxItems: 10_000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id'],
        properties: {
          id: { type: 'string', maxLength: 64 },
          kind: { type: 'string', maxLength: 64 },
          tool: { type: 'string', maxLength: 256 },
          status: { enum: ['pending', 'granted', 'denied', 'expired', 'consumed', 'cancelled'] },
        },
      },
    },
  },
} as const;

/** A tool call as a caller sends it: the body of /explain and POST /approvals, a `gatehouse hash` file. */
export const toolCallSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['tool'],
  // `context`: facts the host runtime sets (docs/spec.md section 5.3), read by `$context.…`.
  properties: { tool: toolNameSchema, args: argsSchema, run: runViewSchema, context: { type: 'object' } },
} as const;

export interface ToolCall {
  tool: string;
  args?: JsonObject;
  run?: RunView;
  context?: JsonObject;
}

/** The request decide() takes: absent arguments are `{}`. */
export function toDecideRequest(call: ToolCall): DecideRequest {
  return {
    tool: call.tool,
    args: call.args ?? {},
    ...(call.run ? { run: call.run } : {}),
    ...(call.context ? { context: call.context } : {}),
  };
}

/**
 * What POST /inspect inspects (docs/spec.md section 5.11): a tool's result with its call, or a model's
 * request or response. One closed object; `stage` says which members it takes (a member of the other
 * stage is refused where it stands). `result` and `content` are any JSON.
 */
export const inspectionSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['stage'],
  properties: {
    stage: { enum: ['result', 'llm_request', 'llm_response'] },
    tool: toolNameSchema,
    args: argsSchema,
    result: {},
    content: {},
    run: runViewSchema,
    context: { type: 'object' },
  },
  // A stage missing or unknown matches neither branch: the refusal names `stage` itself. `true`: the
  // member's schema is above; named again only so that `required` names a known member.
  if: { required: ['stage'], properties: { stage: { const: 'result' } } },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else, never awaited
  then: { required: ['tool', 'result'], properties: { tool: true, result: true, content: false } },
  else: {
    if: { required: ['stage'], properties: { stage: { enum: ['llm_request', 'llm_response'] } } },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else, never awaited
    then: { required: ['content'], properties: { content: true, tool: false, args: false, result: false } },
  },
} as const;

export type Inspection =
  | { stage: 'result'; tool: string; args?: JsonObject; result: JsonValue; run?: RunView; context?: JsonObject }
  | { stage: 'llm_request' | 'llm_response'; content: JsonValue; run?: RunView; context?: JsonObject };

/**
 * The request inspect() takes: absent arguments are `{}`. A number at the root of the value keeps the
 * text it was written with (inspect() reads it beside the request, as the parser keeps it beside the body).
 */
export function toInspectRequest(body: Inspection): InspectRequest {
  const scene = { ...(body.run ? { run: body.run } : {}), ...(body.context ? { context: body.context } : {}) };
  const key = body.stage === 'result' ? 'result' : 'content';
  const request: InspectRequest =
    body.stage === 'result'
      ? { stage: 'result', tool: body.tool, args: body.args ?? {}, result: body.result, ...scene }
      : { stage: body.stage, content: body.content, ...scene };
  const lexeme = numberLexeme(body, key);
  if (lexeme !== undefined) setNumberLexeme(request, key, lexeme);
  return request;
}
