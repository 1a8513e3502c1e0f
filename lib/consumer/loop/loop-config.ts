import type { ResolvedHandlerOptions } from '../../config/handler-definitions';
import type { StreamsClient } from '../../redis/stream-roles';
import type {
  ConsumerLogger,
  DeadLetterSink,
  EntryHandler,
  EntryTracing,
  OwnedPartition,
} from '../context';
import type { HandlerLimits } from '../limits';
import type { AckTurn } from '../order';
import type { BlockingReader, PauseProbe } from '../read';
import type { SweepSchedule } from '../health';

/** Everything one consumer loop needs; no Nest types. */
export interface StreamConsumerConfig {
  stream: string;
  group: string;
  consumer: string;
  /** `'Class.method'`, for logs and stats. */
  handlerName: string;
  options: ResolvedHandlerOptions;
  /**
   * Where the loop sends its commands: a connection of its own (it also parks its reads there),
   * or, with shared reads, the app's loop-commands connection (`ownsClient: false`).
   */
  client: StreamsClient;
  /** How the loop waits for new entries; absent: XREADGROUP BLOCK on `client`. */
  reader?: BlockingReader;
  /** `false`: `client` is shared and its owner closes it, not the loop's stop. @default true */
  ownsClient?: boolean;
  /**
   * The pause flag of the loop's group on its stream, read with the other loops of the group
   * name (`PauseWatch.member`); absent: the loop reads it alone on `client`.
   * @default undefined
   */
  pauses?: PauseProbe;
  /** Where in the sweep interval the loop's second sweep falls (0..1); absent: at random. */
  sweepPhase?: number;
  /**
   * When the loop sweeps: a partition loop's flag, raised by its handler's pending probe
   * (`PartitionSweeps`); absent: its own `SweepPace`.
   * @default undefined
   */
  sweeps?: SweepSchedule;
  handler: EntryHandler;
  deadLetters: DeadLetterSink;
  logger: ConsumerLogger;
  /** Trace spans around handler calls; absent: none (no cost). */
  tracing?: EntryTracing;
  /** Clock, for tests. */
  now?: () => number;
  /**
   * A partition of a partitioned stream (docs/partitions.md): entries of one key run one at a
   * time in stream order, a failed one is retried in its key's lane; absent: a plain stream.
   * @default undefined
   */
  partition?: OwnedPartition;
  /**
   * The handler's `concurrency` and `rateLimit` when several loops share them (a partitioned
   * handler's); absent: the loop's own.
   * @default undefined
   */
  limits?: HandlerLimits;
  /**
   * The turn in which keyed lanes' XACKs leave, when several loops on one connection share it (a
   * partitioned handler's: their XACKs in one write); absent: the loop's own.
   * @default undefined
   */
  ackTurn?: AckTurn;
  /**
   * The module's `idempotencyWindowMs`: an `exactlyOnce` handler's outbox (on a Cluster) is
   * forwarded with the idempotent publish, within this window.
   * @default 600000
   */
  idempotencyWindowMs?: number;
}
