import { DEFAULT_DEDUP_WINDOW_MS } from '../../config/delivery-options';
import type { ResolvedHandlerOptions } from '../../config/handler-definitions';
import type { StreamMessage } from '../../interfaces/stream-message.interface';

/** How long the newest acked id of an entity is kept: a day (see docs/delivery.md). */
export const NEWEST_RECORD_TTL_MS = 86_400_000;

/** A branded id: 24 characters of `[0-9a-z]`, whose plain string order is mint order. */
const BRANDED_ID = /^[0-9a-z]{24}$/;

/** What a loop skips (docs/delivery.md "Duplicates and stale replays"); `null`: nothing. */
export interface SkipRules {
  /** `dedup`: how long an acked branded id is remembered; `undefined`: off. */
  readonly dedupWindowMs: number | undefined;
  /** `newerWins`: the entity of a message; `undefined` when off or when it has none. */
  readonly keyOf: ((message: StreamMessage<unknown>) => string | undefined) | undefined;
}

/** The rules of a handler's `dedup` and `newerWins` options; `null` when both are off. */
export function skipRulesOf(
  options: Pick<ResolvedHandlerOptions, 'dedup' | 'newerWins'>,
): SkipRules | null {
  const { dedup, newerWins } = options;
  const dedupWindowMs =
    dedup === true ? DEFAULT_DEDUP_WINDOW_MS : dedup ? dedup.windowMs : undefined;
  if (dedupWindowMs === undefined && !newerWins) return null;
  const keyOf = newerWins
    ? (message: StreamMessage<unknown>): string | undefined => {
        // only branded ids are ordered by mint time: an entry without one is not compared
        if (!BRANDED_ID.test(message.id)) return undefined;
        try {
          const key: unknown = newerWins(message as StreamMessage<never>);
          return typeof key === 'string' ? key : undefined;
        } catch {
          return undefined; // no key: the entry runs as without newerWins
        }
      }
    : undefined;
  return { dedupWindowMs, keyOf };
}
