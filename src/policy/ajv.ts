// The two ajv configurations of the core. Both never rewrite data (no coercion, no defaults, no
// removal) and never take patterns from data ($data off: CVE-2025-69873).
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { MONEY_KEYWORDS } from './money.js';

/** For tool argument schemas written by operators: a typo'd keyword is a load error, not ignored. */
export function createArgsAjv(): Ajv2020 {
  const ajv = new Ajv2020({
    allErrors: false, // the first failure is enough for the reason, and allErrors is a DoS lever
    strictSchema: true,
    strictNumbers: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    ownProperties: true,
    coerceTypes: false,
    useDefaults: false,
    removeAdditional: false,
    $data: false,
    logger: false,
    validateSchema: true,
    addUsedSchema: false,
  });
  addFormats.default(ajv);
  // Annotations the operator page reads (./money.ts): known to strict mode, their values checked.
  for (const keyword of MONEY_KEYWORDS) ajv.addKeyword(keyword);
  return ajv;
}

/**
 * For our own static schemas (policy files, test files, request bodies). `allErrors` for files an
 * operator fixes at once; `coerceTypes` only for query strings, which arrive as text.
 */
export function createStrictAjv(allErrors: boolean, coerceTypes = false): Ajv2020 {
  return new Ajv2020({
    allErrors,
    strict: true,
    allowUnionTypes: true,
    ownProperties: true,
    coerceTypes,
    useDefaults: false,
    removeAdditional: false,
    $data: false,
    logger: false,
    // These schemas are ours and fixed (tests compile every one): skip validating them against the
    // 2020-12 meta-schema, whose compilation (once per Ajv instance) is most of the start-up time.
    validateSchema: false,
  });
}
