// The schema the operator page checks an edited call against before "Edit and grant" sends it
// (docs/approvals.md, "The operator page"): every catalogue entry that describes the tool under the
// serving set gives its `schema`, and a call must match all of them (the decision checks each), so
// several are joined with `allOf`. A display aid only: the grant's own decision of the amended call
// is what refuses arguments a schema does not accept.
import type { JsonObject } from '../json/value.js';

/** What argsSchemaOf reads of a policy set (./model.ts PolicySet; structural, like ./money.ts). */
export interface SchemaCatalogue {
  plan(tool: string): { readonly entries: readonly { readonly schema?: JsonObject | boolean }[] };
}

/** The tool's argument schema under the serving set: null when no catalogue entry gives one. */
export function argsSchemaOf(set: SchemaCatalogue, tool: string): JsonObject | boolean | null {
  const schemas = set.plan(tool).entries.flatMap((e) => (e.schema === undefined ? [] : [e.schema]));
  if (schemas.length === 0) return null;
  return schemas.length === 1 ? (schemas[0] as JsonObject | boolean) : { allOf: schemas };
}
