// How many generated inputs the generated tests try: fast-check properties, the differential runs
// against bash and dash, the inventory agreement, the attack sweeps and the load bursts. Each test
// names its deep count (what the suite ran before this knob, or more); `npm test` runs a fraction of
// it, `npm run test:deep` all of it. Only the number of inputs changes: every assertion is the same.
//
// A fixed-seed draw whose test asserts that SOME input reaches a case (a boundary, a string the
// pii guard finds) keeps its count: a smaller draw could miss the case, and that would not be the
// same test.
//
// GATEHOUSE_PROPERTY_RUNS is a multiplier of the deep counts: 1 (`npm run test:deep`) runs each in
// full, 0.5 half of each, 4 four times each. Unset, DEFAULT_SCALE.

/** The share of each deep count `npm test` runs. */
export const DEFAULT_SCALE = 0.2;

/** No generated test runs fewer inputs than this unless it says so (nor more than its deep count, below scale 1). */
export const MIN_RUNS = 20;

function readScale(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return DEFAULT_SCALE;
  const scale = Number(raw);
  if (!Number.isFinite(scale) || scale <= 0)
    throw new Error(
      `GATEHOUSE_PROPERTY_RUNS must be a positive number (a multiplier of the deep counts), got ${JSON.stringify(raw)}`,
    );
  return scale;
}

/** The multiplier in force for this run. */
export const RUN_SCALE = readScale(process.env['GATEHOUSE_PROPERTY_RUNS']);

/**
 * The number of generated inputs (or repetitions) to try for a test whose deep count is `deep`: the
 * deep count times the scale, and never fewer than `min` (MIN_RUNS unless given) nor than 1.
 */
export function runs(deep: number, min = MIN_RUNS): number {
  const scaled = Math.round(deep * RUN_SCALE);
  return Math.max(scaled, Math.min(deep, min), 1);
}
