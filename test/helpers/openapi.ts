// openapi.yaml as a test oracle: find the operation a request went to, the response documented for
// its status and media type, and validate a real response body (and required headers) against it
// with ajv, so the document cannot drift from the code.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';

export const OPENAPI_FILE = fileURLToPath(new URL('../../openapi.yaml', import.meta.url));
export const openApiText = readFileSync(OPENAPI_FILE, 'utf8');

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonSchema = { [key: string]: Json };

export interface MediaTypeObject {
  schema?: JsonSchema;
  examples?: Record<string, { $ref?: string; value?: Json }>;
}
export interface HeaderObject {
  required?: boolean;
  schema?: JsonSchema;
  $ref?: string;
}
export interface ResponseObject {
  $ref?: string;
  description?: string;
  headers?: Record<string, HeaderObject>;
  content?: Record<string, MediaTypeObject>;
}
export interface ParameterObject {
  $ref?: string;
  name: string;
  in: 'query' | 'path' | 'header' | 'cookie';
  required?: boolean;
  schema?: JsonSchema;
}
export interface OperationObject {
  operationId?: string;
  security?: Record<string, string[]>[];
  parameters?: ParameterObject[];
  requestBody?: { required?: boolean; content?: Record<string, MediaTypeObject> };
  responses?: Record<string, ResponseObject>;
}
export type PathItem = { parameters?: ParameterObject[] } & Partial<Record<HttpMethod, OperationObject>>;
export interface OpenApiDocument {
  openapi: string;
  security?: Record<string, string[]>[];
  paths: Record<string, PathItem>;
  components: Record<string, Record<string, unknown>>;
}

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** The parsed document (the yaml package's default: YAML 1.2 core schema, no custom tags). */
export const openApi = parse(openApiText) as OpenApiDocument;

/** An ajv for the document: strict about keywords (a typo'd keyword fails), formats checked. */
export function createOpenApiAjv(options: { coerceTypes?: boolean } = {}): Ajv2020 {
  const ajv = new Ajv2020({
    strict: true,
    strictTypes: false, // `allOf: [{$ref}, {properties: …}]` narrows without repeating `type`
    strictRequired: false,
    allowUnionTypes: true,
    allErrors: true,
    coerceTypes: options.coerceTypes ?? false,
    useDefaults: false,
    removeAdditional: false,
    logger: false,
  });
  addFormats.default(ajv);
  // The document is registered whole so `#/components/...` refs resolve inside it; its top-level
  // OpenAPI fields are not schema keywords, and are declared as inert ones for strict mode.
  for (const keyword of Object.keys(openApi)) {
    if (!ajv.getKeyword(keyword)) ajv.addKeyword({ keyword });
  }
  ajv.addSchema(openApi as unknown as JsonSchema, 'openapi');
  return ajv;
}

const ajv = createOpenApiAjv();
const compiled = new Map<string, ValidateFunction>();

/** A schema taken out of the document, with its local refs pointed at the registered document. */
export function externalize<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => externalize(v)) as T;
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `openapi${v}` : externalize(v);
  }
  return out as T;
}

/** Compile a schema of the document (its `#/...` refs resolve against the document). Cached by key. */
export function compileDocumentSchema(
  schema: JsonSchema,
  key: string = JSON.stringify(schema),
  withAjv: Ajv2020 = ajv,
): ValidateFunction {
  let validate = withAjv === ajv ? compiled.get(key) : undefined;
  if (validate === undefined) {
    validate = withAjv.compile(externalize(schema));
    if (withAjv === ajv) compiled.set(key, validate);
  }
  return validate;
}

/** Resolve a local `#/a/b` reference of the document. Throws when it does not resolve. */
export function resolvePointer(ref: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`only local references are used in openapi.yaml, not ${ref}`);
  let node: unknown = openApi;
  for (const raw of ref.slice(2).split('/')) {
    const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, part))
      throw new Error(`unresolved $ref ${ref}`);
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/** Follow a Reference Object (a response, parameter, example or header) to what it names. */
export function deref<T extends object>(value: unknown): T {
  let v: unknown = value;
  for (
    let i = 0;
    i < 10 && v !== null && typeof v === 'object' && typeof (v as { $ref?: unknown }).$ref === 'string';
    i++
  ) {
    v = resolvePointer((v as { $ref: string }).$ref);
  }
  return v as T;
}

export interface FoundOperation {
  path: string;
  method: HttpMethod;
  operation: OperationObject;
  pathItem: PathItem;
  params: Record<string, string>;
}

/** Every operation of the document. */
export function openApiOperations(): FoundOperation[] {
  const out: FoundOperation[] = [];
  for (const [path, pathItem] of Object.entries(openApi.paths)) {
    for (const method of HTTP_METHODS) {
      const operation = pathItem[method];
      if (operation) out.push({ path, method, operation, pathItem, params: {} });
    }
  }
  return out;
}

function templateRegExp(template: string): RegExp {
  const source = template
    .split(/(\{[^}]+\})/)
    .map((part) =>
      part.startsWith('{') ? `(?<${part.slice(1, -1)}>[^/]+)` : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('');
  return new RegExp(`^${source}$`);
}

/** The operation a request goes to: a literal path wins over a template (`/approvals` before `/approvals/{id}`). */
export function findOperation(method: string, url: string): FoundOperation {
  const m = method.toLowerCase() as HttpMethod;
  const path = url.split('?')[0]!;
  const candidates = Object.entries(openApi.paths)
    .map(([template, pathItem]) => ({ template, pathItem, match: templateRegExp(template).exec(path) }))
    .filter((c) => c.match !== null)
    .sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0));
  if (candidates.length === 0) throw new Error(`openapi.yaml documents no path matching ${path}`);
  for (const c of candidates) {
    const operation = c.pathItem[m];
    if (operation)
      return { path: c.template, method: m, operation, pathItem: c.pathItem, params: { ...c.match!.groups } };
  }
  throw new Error(
    `openapi.yaml documents no ${method.toUpperCase()} on ${candidates.map((c) => c.template).join(', ')}`,
  );
}

/** The response object documented for a status (exact, then `4XX`-style, then `default`). */
export function findResponse(found: FoundOperation, status: number): { key: string; response: ResponseObject } {
  const responses = found.operation.responses ?? {};
  for (const key of [String(status), `${Math.floor(status / 100)}XX`, 'default']) {
    const r = responses[key];
    if (r) return { key, response: deref<ResponseObject>(r) };
  }
  throw new Error(
    `openapi.yaml: ${found.method.toUpperCase()} ${found.path} documents no ${status} response (documented: ${Object.keys(responses).join(', ')})`,
  );
}

const isJsonMediaType = (mt: string): boolean => mt === 'application/json' || mt.endsWith('+json');

function describeErrors(validate: ValidateFunction): string {
  return (validate.errors ?? [])
    .slice(0, 12)
    .map(
      (e) =>
        `  ${e.instancePath || '(root)'} ${e.message ?? e.keyword}${e.keyword === 'additionalProperties' || e.keyword === 'unevaluatedProperties' ? ` (${JSON.stringify(e.params)})` : ''} [${e.schemaPath}]`,
    )
    .join('\n');
}

function excerpt(body: unknown): string {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return text === undefined ? '(no body)' : text.length > 600 ? `${text.slice(0, 600)}…` : text;
}

/**
 * Throws (with a readable message) unless openapi.yaml documents this response: the operation for
 * method + URL, the status, the media type, and a body valid against the schema. With `headers`,
 * every header the response declares `required` must be present and valid.
 */
export function assertMatchesOpenApi(
  method: string,
  urlPath: string,
  status: number,
  contentType: string | undefined,
  body: unknown,
  headers?: Record<string, string | string[] | number | undefined>,
): void {
  const found = findOperation(method, urlPath);
  const where = `${method.toUpperCase()} ${urlPath} (${found.path}) → ${status}`;
  const { key, response } = findResponse(found, status);
  const content = response.content ?? {};
  const mediaType = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (Object.keys(content).length === 0) {
    if (body !== undefined && body !== '')
      throw new Error(`${where}: openapi.yaml documents no body, got ${excerpt(body)}`);
  } else {
    const media = content[mediaType];
    if (media === undefined) {
      throw new Error(
        `${where}: content type ${JSON.stringify(contentType)} is not documented (documented: ${Object.keys(content).join(', ')})`,
      );
    }
    let value = body;
    if (isJsonMediaType(mediaType) && typeof body === 'string') {
      try {
        value = JSON.parse(body);
      } catch {
        throw new Error(`${where}: the ${mediaType} body is not JSON: ${excerpt(body)}`);
      }
    }
    if (media.schema) {
      const schemaKey = `${found.method} ${found.path} ${key} ${mediaType}`;
      const validate = compileDocumentSchema(media.schema, schemaKey);
      if (!validate(value)) {
        throw new Error(
          `${where} ${mediaType}: the body does not match openapi.yaml\n${describeErrors(validate)}\nbody: ${excerpt(value)}`,
        );
      }
    }
  }
  if (headers !== undefined) {
    for (const [name, h] of Object.entries(response.headers ?? {})) {
      const header = deref<HeaderObject>(h);
      const raw = headers[name.toLowerCase()] ?? headers[name];
      if (raw === undefined) {
        if (header.required) throw new Error(`${where}: the required header ${name} is missing`);
        continue;
      }
      if (header.schema) {
        const validate = compileDocumentSchema(header.schema, `header ${JSON.stringify(header.schema)}`);
        if (!validate(String(raw)))
          throw new Error(
            `${where}: header ${name}: ${JSON.stringify(raw)} does not match openapi.yaml\n${describeErrors(validate)}`,
          );
      }
    }
  }
}

/** What inject() answers, as far as the check needs it. */
export interface InjectedResponse {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

/** assertMatchesOpenApi for an inject() response; returns the parsed JSON body (or the text). */
export function assertResponseMatchesOpenApi(method: string, url: string, res: InjectedResponse): unknown {
  const contentType = res.headers['content-type'];
  assertMatchesOpenApi(
    method,
    url,
    res.statusCode,
    contentType === undefined ? undefined : String(contentType),
    res.body,
    res.headers,
  );
  const mediaType = String(contentType ?? '')
    .split(';')[0]!
    .trim();
  return isJsonMediaType(mediaType) && res.body !== '' ? JSON.parse(res.body) : res.body;
}

/** The request body schema of an operation (its `application/json` media type), refs pointed at the document. */
export function requestSchemaFor(method: string, path: string): JsonSchema {
  const found = findOperation(method, path);
  const schema = found.operation.requestBody?.content?.['application/json']?.schema;
  if (schema === undefined)
    throw new Error(`openapi.yaml: ${method.toUpperCase()} ${found.path} documents no application/json request body`);
  return externalize(schema);
}

/** requestSchemaFor, compiled. */
export function requestValidatorFor(method: string, path: string): ValidateFunction {
  const found = findOperation(method, path);
  return compileDocumentSchema(requestSchemaFor(method, path), `request ${found.method} ${found.path}`);
}

/** The parameters of an operation (path item and operation level, refs followed). */
export function parametersFor(method: string, path: string): ParameterObject[] {
  const found = findOperation(method, path);
  return [...(found.pathItem.parameters ?? []), ...(found.operation.parameters ?? [])].map((p) =>
    deref<ParameterObject>(p),
  );
}

/**
 * The parameters `in` one place as a closed object schema (the service refuses unknown query
 * parameters), for validating a parsed query string with a coercing ajv.
 */
export function parameterObjectSchema(method: string, path: string, where: 'query' | 'path'): JsonSchema {
  const params = parametersFor(method, path).filter((p) => p.in === where);
  return externalize({
    type: 'object',
    additionalProperties: false,
    required: params.filter((p) => p.required).map((p) => p.name),
    properties: Object.fromEntries(params.map((p) => [p.name, p.schema ?? {}])),
  });
}
