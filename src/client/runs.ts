// The run view a client keeps for the host (spec section 5.3: `run.steps`), so policies that count a run's
// calls (`limits.max_calls`, `count(steps, …)`) see them without the host recording each one. Kept in
// memory per run id; a caller that passes `run.steps` itself keeps its own view and this stays out.
import type { RunStep, ToolCall } from './types.js';

/** Runs remembered at once; the oldest is forgotten beyond (a long-lived process serves many runs). */
const MAX_RUNS = 1000;

export interface RunLog {
  /** The call as sent (its run id and steps filled in) and how to record its outcome. */
  view(call: ToolCall, runId: string | undefined): { call: ToolCall; record: (step: RunStep) => void };
}

export function createRunLog(): RunLog {
  const runs = new Map<string, RunStep[]>();
  return {
    view(call, runId) {
      if (runId === undefined) return { call, record: () => {} };
      if (call.run?.steps !== undefined)
        return { call: { ...call, run: { ...call.run, id: runId } }, record: () => {} };
      const steps = runs.get(runId) ?? [];
      const sent: ToolCall = { ...call, run: { ...call.run, id: runId, steps: [...steps] } };
      return {
        call: sent,
        record: (step) => {
          const now = runs.get(runId) ?? []; // other calls of the run may have ended meanwhile
          runs.delete(runId); // re-inserted last: the map's order is the order of use
          runs.set(runId, [...now, step]);
          if (runs.size > MAX_RUNS) runs.delete(runs.keys().next().value as string);
        },
      };
    },
  };
}
