import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type { SkipQuery, StreamsClient } from '../../redis/stream-roles';
import { RecordLookUp, type LookUpAnswer } from './skip-look-up';
import type { OwnRecords } from './skip.types';
import type { LoopContext } from '../context';
import type { SkipRules } from './skip-rules';

/** A read sorted by the skip filter. */
export interface SkipVerdicts {
  /** Indexes (into the messages looked up) of the entries to hand to the handler, in order. */
  readonly run: number[];
  /** Entry ids to ack without a handler call. */
  readonly skipped: string[];
}

/** The look-up of a read's records, sent; its verdicts are read when the read is handled. */
export interface SkipLookUp {
  /**
   * The verdicts: the look-up's answer read beside the records this loop wrote or is writing
   * that the look-up may have missed (those of entries handled meanwhile included).
   */
  verdicts(): Promise<SkipVerdicts>;
  /** Its read will not be handled: nothing is kept for it any more. */
  drop(): void;
}

/** Sorts a read before the handler: which entries run, which are acked unhandled. */
export interface SkipCheck {
  /**
   * The look-up of the records of `messages`, sent now (one MGET; nothing when no entry has a
   * record to look up); {@link SkipLookUp.verdicts} reads it when they are handled.
   */
  lookUp(messages: readonly StreamMessage<unknown>[]): SkipLookUp;
}

/** A look-up that asks nothing: every entry runs. */
function runAll(count: number): SkipLookUp {
  return {
    verdicts: () =>
      Promise.resolve({ run: Array.from({ length: count }, (_, i) => i), skipped: [] }),
    drop: () => undefined,
  };
}

/** Without `dedup` and `newerWins`: every entry runs, nothing is asked of Redis. */
export const NO_SKIPS: SkipCheck = { lookUp: (messages) => runAll(messages.length) };

/** Where the answers of one message are in a look-up. */
interface Asked {
  /** Index of its `acked` query (`dedup`), `-1`: none. */
  readonly acked: number;
  /** Its `newerWins` key, `undefined`: none. */
  readonly key: string | undefined;
  /** Index of its `newest` query, `-1`: none. */
  readonly newest: number;
}

/**
 * The skip filter before the handler (docs/delivery.md "Duplicates and stale replays"): reads the
 * records of a read in one MGET and sets aside
 * - with `dedup`, an entry whose branded id the group acked within the window (a duplicate);
 * - with `newerWins`, an entry whose branded id is not above the newest one the group acked for
 *   its key (stale).
 * A read sent ahead is looked up as its reply is read (docs/delivery.md); a look-up that goes out
 * before the XACK of entries handled here reads their records from {@link OwnRecords}. Each skip
 * is counted and logged (debug); the entries skipped are acked by the caller.
 */
export class SkipFilter implements SkipCheck {
  constructor(
    private readonly context: Pick<
      LoopContext,
      'stream' | 'group' | 'where' | 'logger' | 'counters'
    >,
    private readonly client: Pick<StreamsClient, 'readRecords'>,
    private readonly rules: SkipRules,
    private readonly own: OwnRecords,
  ) {}

  lookUp(messages: readonly StreamMessage<unknown>[]): SkipLookUp {
    const { dedupWindowMs, keyOf } = this.rules;
    const queries: SkipQuery[] = [];
    // one query per branded id and per key, however many entries of the read share it
    const ackedAt = new Map<string, number>();
    const newestAt = new Map<string, number>();
    const asked: Asked[] = new Array<Asked>(messages.length);
    for (let i = 0; i < messages.length; i++) {
      const { id } = messages[i];
      let acked = -1;
      if (dedupWindowMs !== undefined) {
        acked = ackedAt.get(id) ?? queries.push({ kind: 'acked', id }) - 1;
        ackedAt.set(id, acked);
      }
      const key = keyOf?.(messages[i]);
      let newest = -1;
      if (key !== undefined) {
        newest = newestAt.get(key) ?? queries.push({ kind: 'newest', key }) - 1;
        newestAt.set(key, newest);
      }
      asked[i] = { acked, key, newest };
    }
    if (queries.length === 0) return runAll(messages.length);
    const { client, own } = this;
    const { stream, group } = this.context;
    if (!client.readRecords) throw new Error('readRecords is not supported by this client');
    const readRecords = client.readRecords.bind(client);
    const lookUp = new RecordLookUp(queries, {
      own,
      read: (asking) => readRecords(stream, group, asking),
    });
    return {
      verdicts: async () => {
        try {
          return this.sort(messages, asked, await lookUp.read());
        } finally {
          lookUp.close();
        }
      },
      drop: () => lookUp.close(),
    };
  }

  /** The verdicts of `messages` from the look-up's answer and this loop's own records. */
  private sort(
    messages: readonly StreamMessage<unknown>[],
    asked: readonly Asked[],
    answer: LookUpAnswer,
  ): SkipVerdicts {
    const { found, own } = answer;
    const run: number[] = [];
    const skipped: string[] = [];
    let duplicates = 0;
    let stale = 0;
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i];
      const { acked, key, newest } = asked[i];
      if (acked >= 0 && (found[acked] !== null || own?.acked.has(message.id))) {
        duplicates++;
        skipped.push(message.entryId);
        const by = found[acked] !== null ? 'the group' : 'this consumer (its XACK on its way)';
        this.log(message, 'duplicate', `branded id ${message.id} was acked by ${by} already`);
        continue;
      }
      if (key !== undefined) {
        const groupNewest = newest >= 0 ? found[newest] : null;
        const here = own?.newest.get(key);
        const highest =
          here !== undefined && (groupNewest === null || here > groupNewest) ? here : groupNewest;
        if (highest !== null && message.id <= highest) {
          stale++;
          skipped.push(message.entryId);
          const by = highest === groupNewest ? 'the group' : 'this consumer (its XACK on its way)';
          this.log(
            message,
            'stale',
            `${by} acked ${highest} for its key, not older than ${message.id}`,
          );
          continue;
        }
      }
      run.push(i);
    }
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
