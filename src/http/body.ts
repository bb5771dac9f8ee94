// Request bodies: exactly one media type, parsed from the raw bytes by the strict parser (docs/spec.md
// section 4), and validated by ajv configured never to coerce, default or strip. Five Fastify
// advisories in four years were "the router and the validator saw different content types"; this
// check does not depend on Fastify getting that right.
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import { parseJson } from '../json/parse.js';
import { escapePointerSegment } from '../json/pointer.js';
import { createStrictAjv } from '../policy/ajv.js';
import { HttpError } from './errors.js';
import { headerCount } from './headers.js';

const JSON_MEDIA_TYPE = /^application\/json(?:; ?charset=(?:utf-8|"utf-8"))?$/i;

/**
 * Object keys allowed in one body. Each key costs a duplicate check when parsing and a sort when
 * hashing; past this a body could hold the event loop for tens of milliseconds. Real tool arguments
 * are far below it; arrays are bounded by BODY_LIMIT alone.
 */
export const MAX_BODY_KEYS = 10_000;

export function registerStrictBodies(app: FastifyInstance, bodyLimit: number): void {
  // preParsing runs after authentication (onRequest) and before any byte of the body is parsed.
  // Callback style: no promise and no microtask turn per request.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    // Node reads the first of repeated Content-Types; a proxy in front may read another (headers.ts).
    if (headerCount(request.raw.rawHeaders, 'content-type') > 1) {
      return done(new HttpError('bad_request', 'send exactly one Content-Type header'));
    }
    const length = request.headers['content-length'];
    const hasBody = (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
    if (!hasBody) return done(null, payload);
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
      return done(
        new HttpError('unsupported_media_type', 'Content-Encoding: compressed bodies are not accepted (only identity)'),
      );
    }
    // A transfer coding is the other way to say the body is compressed (`gzip, chunked`, RFC 9112
    // section 6.1). Node removes only the chunking: the parser would get the compressed bytes.
    const transfer = request.headers['transfer-encoding'];
    if (transfer !== undefined && transfer.toLowerCase() !== 'chunked') {
      return done(
        new HttpError('unsupported_media_type', 'Transfer-Encoding: compressed bodies are not accepted (only chunked)'),
      );
    }
    const type = request.headers['content-type'];
    if (type === undefined || !JSON_MEDIA_TYPE.test(type)) {
      return done(new HttpError('unsupported_media_type', 'send Content-Type: application/json'));
    }
    done(null, payload);
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, (_request, body, done) => {
    try {
      done(null, parseJson(body as Buffer, { maxKeys: MAX_BODY_KEYS }));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  // Bodies: no coercion, no defaults, no removal: an unknown field is refused, never stripped.
  // Query strings and params arrive as text, so those (and only those) are coerced to their types.
  const bodyAjv = createStrictAjv(false);
  const queryAjv = createStrictAjv(false, true);
  const compiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
    httpPart === 'body' ? bodyAjv.compile(schema as object) : compileTextPart(queryAjv, schema as object);
  app.setValidatorCompiler(compiler);
}

type Validator = ReturnType<FastifySchemaCompiler<unknown>>;

/** An integer in a query string or a path: decimal digits, optionally signed. */
const DECIMAL_INTEGER = /^-?[0-9]+$/;

/**
 * A validator for a part that arrives as text (query string, path parameters). ajv's coercion reads
 * an integer with Number(), which also takes `0x3`, `1e1`, ` 3` and `3.0`; an integer property must
 * be written in decimal digits, or it fails like any other schema failure (400, naming the property).
 * Our query schemas are flat objects, so only top-level properties are checked.
 */
function compileTextPart(ajv: Ajv2020, schema: object): Validator {
  const validate = ajv.compile(schema);
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  const integers = Object.keys(properties).filter((name) => properties[name]?.type === 'integer');
  if (integers.length === 0) return validate;
  const checked: Validator = (data: unknown) => {
    const fields = typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : {};
    const errors = integers
      .filter((name) => typeof fields[name] === 'string' && !DECIMAL_INTEGER.test(fields[name]))
      .map((name) => ({
        keyword: 'pattern',
        instancePath: `/${escapePointerSegment(name)}`,
        schemaPath: `#/properties/${escapePointerSegment(name)}/type`,
        params: { pattern: DECIMAL_INTEGER.source },
        message: 'must be an integer written in decimal digits',
      }));
    if (errors.length > 0) {
      checked.errors = errors;
      return false;
    }
    const valid = validate(data);
    checked.errors = validate.errors ?? null;
    return valid;
  };
  return checked;
}
