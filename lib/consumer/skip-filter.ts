import type { StreamMessage } from '../interfaces/stream-message.interface';
import type { SkipQuery, StreamsClient } from '../redis/stream-roles';
import type { LoopContext } from './loop.types';
import type { SkipRules } from './skip-rules';

/** A read sorted by the skip filter. */
export interface SkipVerdicts {
  /** Indexes (into the messages filtered) of the entries to hand to the handler, in order. */
  readonly run: number[];
  /** Entry ids to ack without a handler call. */
  readonly skipped: string[];
}

/** Sorts a read before the handler: which entries run, which are acked unhandled. */
export interface SkipCheck {
  filter(messages: readonly StreamMessage<unknown>[]): Promise<SkipVerdicts>;
}

/** Without `dedup` and `newerWins`: every entry runs, nothing is asked of Redis. */
export const NO_SKIPS: SkipCheck = {
  filter: (messages) => Promise.resolve({ run: messages.map((_, i) => i), skipped: [] }),
};

/**
 * The skip filter before the handler (docs/delivery.md "Duplicates and stale replays"): reads the
 * records of a batch in one round trip (MGET) and sets aside
 * - with `dedup`, an entry whose branded id the group acked within the window (a duplicate);
 * - with `newerWins`, an entry whose branded id is not above the newest one the group acked for
 *   its key (stale).
 * Each skip is counted and logged (debug); the entries skipped are acked by the caller.
 */
export class SkipFilter implements SkipCheck {
  constructor(
    private readonly context: Pick<
      LoopContext,
      'stream' | 'group' | 'where' | 'logger' | 'counters'
    >,
    private readonly client: Pick<StreamsClient, 'readRecords'>,
    private readonly rules: SkipRules,
  ) {}

  async filter(messages: readonly StreamMessage<unknown>[]): Promise<SkipVerdicts> {
    if (messages.length === 0) return { run: [], skipped: [] };
    const { stream, group } = this.context;
    const queries: SkipQuery[] = [];
    const dedupAt: number[] = new Array<number>(messages.length).fill(-1);
    const newestAt: number[] = new Array<number>(messages.length).fill(-1);
    messages.forEach((message, i) => {
      if (this.rules.dedupWindowMs !== undefined) {
        dedupAt[i] = queries.push({ kind: 'acked', id: message.id }) - 1;
      }
      const key = this.rules.keyOf?.(message);
      if (key !== undefined) newestAt[i] = queries.push({ kind: 'newest', key }) - 1;
    });
    if (queries.length === 0) return { run: messages.map((_, i) => i), skipped: [] };
    if (!this.client.readRecords) throw new Error('readRecords is not supported by this client');
    const records = await this.client.readRecords(stream, group, queries);
    const run: number[] = [];
    const skipped: string[] = [];
    let duplicates = 0;
    let stale = 0;
    messages.forEach((message, i) => {
      if (dedupAt[i] >= 0 && records[dedupAt[i]] !== null) {
        duplicates++;
        skipped.push(message.entryId);
        this.log(message, 'duplicate', `branded id ${message.id} was acked by the group already`);
        return;
      }
      const newest = newestAt[i] >= 0 ? records[newestAt[i]] : null;
      if (newest !== null && message.id <= newest) {
        stale++;
        skipped.push(message.entryId);
        this.log(
          message,
          'stale',
          `the group acked ${newest} for its key, not older than ${message.id}`,
        );
        return;
      }
      run.push(i);
    });
    if (duplicates > 0) this.context.counters.skipped('duplicate', duplicates);
    if (stale > 0) this.context.counters.skipped('stale', stale);
    return { run, skipped };
  }

  private log(message: StreamMessage<unknown>, reason: string, why: string): void {
    this.context.logger.debug?.(
      `${this.context.where}: entry ${message.entryId} skipped (${reason}): ${why}; acked without a handler call`,
    );
  }
}
