// The JSON Schema of a policy file (docs/spec.md section 2). Closed everywhere: an unknown key is a load
// error, never ignored. Semantic checks that a schema cannot express well (globs, conditions,
// environments, identities) live in compile.ts. A list of strings written as one string is spelled
// out before this schema is checked (file-lists.ts), so here every such list is an array.

const name = { type: 'string', minLength: 1, maxLength: 256 } as const;
const nameList = { type: 'array', minItems: 1, maxItems: 10_000, items: name } as const;
const envName = { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' } as const;
const decisionMode = { enum: ['allow', 'deny', 'side_effects'] } as const;
const toolKind = { enum: ['read_only', 'local_mutation', 'remote_mutation', 'destructive'] } as const;
const argPath = { type: 'string', minLength: 1, maxLength: 512 } as const;
const argPathList = { type: 'array', maxItems: 256, items: argPath } as const;
// A window length in the one duration grammar (duration.ts): a number of seconds, or a string with an
// optional unit (`90s`, `15m`, `2h`, `7d`). compile.ts checks that it is whole seconds, at most a year.
const duration = {
  anyOf: [
    { type: 'integer', minimum: 1, maximum: 31_622_400 },
    { type: 'string', pattern: '^[0-9]{1,15}(ms|s|m|h|d)?$' },
  ],
} as const;
const limitScope = { enum: ['user', 'team', 'agent', 'run', 'global'] } as const;
const onExceed = { enum: ['deny', 'require_approval', 'abort'] } as const;
// An amount a policy writes (a budget's maximum): a number ≥ 0 (exactness is checked in compile.ts).
const amount = { type: 'number', minimum: 0 } as const;

// Who may answer an approval and how many (docs/spec.md section 2.4); each list non-empty when given.
const eligibility = {
  approvers: {
    type: 'object',
    additionalProperties: false,
    minProperties: 1,
    properties: { roles: nameList, teams: nameList, users: nameList },
  },
  quorum: { type: 'integer', minimum: 1, maximum: 5 },
  separate_from_requester: { enum: ['none', 'team'] },
} as const;
const approvalBlock = {
  type: 'object',
  additionalProperties: false,
  properties: {
    kind: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,64}$' },
    capability: argPathList,
    presentation: argPathList,
    ...eligibility,
  },
} as const;

const selectors = {
  tools: nameList,
  kinds: { type: 'array', minItems: 1, items: { enum: [...toolKind.enum, 'unknown'] } },
  tags: nameList,
  envs: { type: 'array', minItems: 1, items: envName },
  teams: nameList,
  users: nameList,
  agents: nameList,
} as const;

export const policyFileSchema = {
  $id: 'https://gatehouse.dev/schemas/policy-file.json',
  type: 'object',
  additionalProperties: false,
  // An empty document (an empty TOML file is one) is a mistake, not a policy of defaults.
  minProperties: 1,
  properties: {
    policy: { type: 'string' },
    version: { type: 'string' },
    environments: { type: 'array', minItems: 1, maxItems: 256, items: envName },
    scope: { type: 'object', additionalProperties: false, minProperties: 1, properties: selectors },
    default: {
      anyOf: [decisionMode, { type: 'object', propertyNames: envName, additionalProperties: decisionMode }],
    },
    tools: {
      type: 'object',
      maxProperties: 100_000,
      propertyNames: { minLength: 1, maxLength: 256 },
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        required: ['kind'],
        properties: {
          kind: toolKind,
          tags: nameList,
          confirm: { type: 'boolean' },
          // The approval `confirm` asks for: the same block as a rule's.
          approval: approvalBlock,
          description: { type: 'string', maxLength: 4096 },
          schema: { type: ['object', 'boolean'] },
          // The JSON Schema of the tool's result: its property names may appear in a result guard's reason.
          result_schema: { type: ['object', 'boolean'] },
        },
      },
    },
    rules: {
      type: 'array',
      maxItems: 100_000,
      items: {
        type: 'object',
        additionalProperties: false,
        properties: {
          id: name,
          ...selectors,
          when: { type: 'string' },
          allow: { type: 'boolean' },
          abort: { type: 'boolean' },
          confirm: { type: ['boolean', 'string'] },
          reason: { type: 'string', minLength: 1, maxLength: 1024 },
          approval: approvalBlock,
        },
      },
    },
    guards: {
      type: 'array',
      maxItems: 1000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['guard'],
        properties: {
          id: name,
          guard: { type: 'string' },
          ...selectors,
          // What the guard reads (the combinations refused are checked in compile.ts).
          on: {
            type: 'array',
            minItems: 1,
            maxItems: 4,
            items: { enum: ['args', 'result', 'llm_request', 'llm_response'] },
          },
          action: { enum: ['deny', 'require_approval', 'redact'] },
          // A pattern guard's detectors: RE2 syntax (compiled in compile.ts); `name` is a finding's type.
          patterns: {
            type: 'array',
            minItems: 1,
            maxItems: 64,
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['name', 'regex'],
              properties: {
                name: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,64}$' },
                regex: { type: 'string', minLength: 1, maxLength: 1024 },
              },
            },
          },
        },
      },
    },
    // Budgets and rate limits (docs/spec.md section 2.9): counted in the database, checked by the route.
    budgets: {
      type: 'array',
      maxItems: 1000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['per', 'scope'],
        properties: {
          id: name,
          ...selectors,
          sum: argPath,
          max: amount,
          max_usd: amount,
          per: { anyOf: [{ enum: ['minute', 'hour', 'day', 'week', 'month'] }, ...duration.anyOf] },
          scope: limitScope,
          on_exceed: onExceed,
        },
      },
    },
    rate_limits: {
      type: 'array',
      maxItems: 1000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['calls', 'per', 'scope'],
        properties: {
          id: name,
          ...selectors,
          // The times of the last `calls` allowed calls are kept per counter: bounded.
          calls: { type: 'integer', minimum: 1, maximum: 1000 },
          per: duration,
          scope: limitScope,
          on_exceed: onExceed,
        },
      },
    },
    limits: {
      type: 'object',
      additionalProperties: false,
      properties: { max_calls: { type: 'integer', minimum: 0, maximum: 1_000_000_000 } },
    },
  },
} as const;
