// Driving the engine (src/engine/) without an app: a call's log that keeps its lines, an answer
// awaited when it is a promise, and the status and body a route would send for it.
import type { Answer } from '../../src/engine/index.js';
import type { CallLog } from '../../src/engine/parts.js';

export type CollectingLog = CallLog & { lines: Record<string, unknown>[] };

/** A call's log: collects the lines the engine writes for one call. */
export function callLog(): CollectingLog {
  const lines: Record<string, unknown>[] = [];
  const write = (level: string) => (o: object, msg: string) => lines.push({ ...o, msg, level });
  // The engine logs an object and a message, never pino's other call forms.
  return { lines, info: write('info'), error: write('error') } as unknown as CollectingLog;
}

export async function settled(answer: Answer | Promise<Answer>): Promise<Answer> {
  return answer instanceof Promise ? await answer : answer;
}

/** The decision an answer carries, as its body says it. */
export function decisionOf(answer: Answer): { status: number; body: Record<string, unknown> } {
  if (answer.kind === 'text')
    return { status: answer.status, body: JSON.parse(answer.body) as Record<string, unknown> };
  return {
    status: answer.result.decision === 'allow' ? 200 : 403,
    body: { decision: answer.result.decision, rule: answer.result.rule, decision_id: answer.decisionId },
  };
}
