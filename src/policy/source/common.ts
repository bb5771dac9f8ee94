// What every reader of a policy file gives back: the parsed value and a locator from key paths to
// lines and columns, so every later error can say where it is.
import type { JsonValue } from '../../json/value.js';
import type { LoadProblem } from '../errors.js';

export type KeyPath = readonly (string | number)[];

export interface Location {
  line: number;
  column: number;
}

export interface PolicySource {
  readonly file: string;
  readonly value: JsonValue;
  /** Where the value at `path` is written; with `atKey`, where its key is. Falls back to the nearest ancestor. */
  locate(path: KeyPath, atKey?: boolean): Location;
}

export const MAX_FILE_BYTES = 8 * 1024 * 1024;

export const MAX_DEPTH = 32;

export const START: Location = { line: 1, column: 1 };

export type Locator = PolicySource['locate'];

export interface Parsed {
  raw?: { value: unknown; locate: Locator };
  problems: LoadProblem[];
}
