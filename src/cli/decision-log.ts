// Reading a captured decision log (JSON lines, as the service writes them on stdout) into records,
// for `replay --from` and `cases --from`. Other log lines (start-up, reloads) are passed over; a line
// that is not JSON, or a decision line that is not one, is counted with where the first one is.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { JsonParseError, parseJson } from '../json/parse.js';
import { type DecisionRecord, recordFromLogLine } from '../policy/record.js';

export interface DecisionLog {
  records: DecisionRecord[];
  /** Lines that are not JSON, or decision lines the record format refuses; the first one's line and why. */
  unreadable: { count: number; first: { line: number; problem: string } | null };
}

/** Every decision of the log file at `path` (`-`: stdin). Throws the read's error (ENOENT…). */
export async function readDecisionLog(path: string): Promise<DecisionLog> {
  const input = path === '-' ? process.stdin : createReadStream(path);
  const out: DecisionLog = { records: [], unreadable: { count: 0, first: null } };
  const bad = (line: number, problem: string): void => {
    out.unreadable.count++;
    out.unreadable.first ??= { line, problem };
  };
  let n = 0;
  for await (const text of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
    n++;
    if (text.trim() === '') continue;
    let value: unknown;
    try {
      value = parseJson(text); // the strict parser: numbers keep the text they were logged with
    } catch (err) {
      if (!(err instanceof JsonParseError)) throw err;
      bad(n, 'not a JSON line');
      continue;
    }
    const record = recordFromLogLine(value);
    if (typeof record === 'string') bad(n, record);
    else if (record !== null) out.records.push(record);
  }
  return out;
}
