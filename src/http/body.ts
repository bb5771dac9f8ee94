// Request bodies: exactly one media type, parsed from the raw bytes by the strict parser (SPEC
// section 4), and validated by ajv configured never to coerce, default or strip. Five Fastify
// advisories in four years were "the router and the validator saw different content types"; this
// check does not depend on Fastify getting that right.
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import { parseJson } from '../json/parse.js';
import { createStrictAjv } from '../policy/ajv.js';
import { HttpError } from './errors.js';

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
    const length = request.headers['content-length'];
    const hasBody = (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
    if (!hasBody) return done(null, payload);
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
      return done(new HttpError('unsupported_media_type', 'compressed bodies are not accepted'));
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
    (httpPart === 'body' ? bodyAjv : queryAjv).compile(schema as object);
  app.setValidatorCompiler(compiler);
}
