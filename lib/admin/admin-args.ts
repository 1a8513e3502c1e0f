import { describeValue as describe } from '../config/describe-value';
import type {
  DeadLetterQueryOptions,
  RedriveOptions,
} from '../interfaces/dead-letter-entry.interface';

// The checks of EchoStreamAdmin's arguments: a bad one is a TypeError naming the method, the
// option and the value, thrown before anything is read or moved.

export function checkGroupArgs(method: string, stream: unknown, group: unknown): void {
  const where = `EchoStreamAdmin.${method}()`;
  if (typeof stream !== 'string' || stream.length === 0)
    throw new TypeError(`${where}: stream must be a non-empty string, got ${describe(stream)}`);
  if (typeof group !== 'string' || group.length === 0)
    throw new TypeError(`${where}: group must be a non-empty string, got ${describe(group)}`);
}

export function checkArgs(
  method: string,
  stream: unknown,
  options: RedriveOptions | DeadLetterQueryOptions,
  defaultCount: number | undefined,
): { group: string | undefined; count: number } {
  const where = `EchoStreamAdmin.${method}()`;
  if (typeof stream !== 'string' || stream.length === 0) {
    throw new TypeError(`${where}: stream must be a non-empty string, got ${describe(stream)}`);
  }
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`${where}: options must be an object, got ${describe(options)}`);
  }
  const { group, count } = options;
  if (group !== undefined && (typeof group !== 'string' || group.length === 0)) {
    throw new TypeError(
      `${where}: option 'group' must be a non-empty string, got ${describe(group)}`,
    );
  }
  if (
    count !== undefined &&
    (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0)
  ) {
    throw new TypeError(`${where}: option 'count' must be an integer >= 0, got ${describe(count)}`);
  }
  return { group, count: count ?? defaultCount ?? Number.POSITIVE_INFINITY };
}

const ENTRY_ID = /^\d{1,20}-\d{1,20}$/;

/** `undefined` stays `undefined` (no filter); otherwise an array of `<ms>-<seq>` ids. */
export function checkEntryIds(method: string, ids: unknown): string[] | undefined {
  if (ids === undefined) return undefined;
  const bad = Array.isArray(ids)
    ? ids.find((id) => typeof id !== 'string' || !ENTRY_ID.test(id))
    : ids;
  if (!Array.isArray(ids) || bad !== undefined) {
    throw new TypeError(
      `EchoStreamAdmin.${method}(): entry ids must be '<ms>-<seq>' strings, got ${describe(bad)}`,
    );
  }
  return ids as string[];
}
