import { MODULE_DEFAULTS } from '../../config/module-options';
import type { StreamMessage } from '../../interfaces/stream-message.interface';
import {
  AckBuffer,
  AckRecords,
  AckWriter,
  CommitQueue,
  DeadLetterPath,
  EntryDeletion,
  Settlement,
  type AckRecordSource,
} from '../settle';
import { LoopTransactions, OutboxForwarder } from '../commit';
import { AckTurn, KeyAckGate, KeyLaneRunner, HeldKeys } from '../order';
import {
  OwnConnectionRead,
  readClaimIdleMs,
  ParkedRead,
  PauseGate,
  NEVER_PAUSED,
  PauseWatch,
  LOOK_UP_READS_AHEAD,
  ReadAhead,
} from '../read';
import { Checkpoints, Delivery, HandlerRunner } from '../handle';
import { type BesideBeat, ConsumerCounters, type LoopContext } from '../context';
import type { StreamConsumerConfig } from './loop-config';
import { KeyRetry, RetryScheduler } from '../retry';
import { HeldEntries, Heartbeat, LoopHealth, SweepPace, type SweepSchedule } from '../health';
import { PelSweep, RetryClaims } from '../recover';
import { handlerLimits, type StartLimiter } from '../limits';
import { SkipFilter, skipRulesOf } from '../skip';
import { Shutdown, StopSwitch } from './shutdown';

/** The collaborators of one loop, the steps of its beat; all built from one {@link LoopContext}. */
export interface LoopParts {
  readonly context: LoopContext;
  /** The loop's figures (written by the collaborators through `LoopCounters`). */
  readonly counters: ConsumerCounters;
  readonly stopSwitch: StopSwitch;
  /** Group known, own PEL to drain, backoff streak, state. */
  readonly health: LoopHealth;
  /** How many entries a read may take (`NO_RATE_LIMIT` without `rateLimit`). */
  readonly limiter: StartLimiter;
  /** When the next sweep is due. */
  readonly pace: SweepSchedule;
  /** Holds the beat while the group is paused on the stream. */
  readonly pause: PauseGate;
  /** Keeps held entries claimed. */
  readonly heartbeat: Heartbeat;
  /** Handled entries waiting for their XACK. */
  readonly acks: AckBuffer;
  /** Handles one read and settles it. */
  readonly delivery: Delivery;
  /** Partitions: the keys whose failed entry waits for its retry (absent: none). */
  readonly heldKeys?: HeldKeys;
  /** Own PEL drain, poison sweep, reclaim. */
  readonly pel: PelSweep;
  /** Due retries; waiting ones released at stop. */
  readonly retries: RetryClaims;
  /** The next read sent while a full batch is handled. */
  readonly readAhead: ReadAhead;
  /** The parked read of new entries. */
  readonly parked: ParkedRead;
  readonly shutdown: Shutdown;
  /**
   * What runs on its own timer beside the beat: on a Cluster with `exactlyOnce` the forwarder of
   * the publishes its commits left in the group's outbox; with `deleteOnAck` the sweep of what
   * every group acknowledged.
   */
  readonly beside: readonly BesideBeat[];
}

/**
 * Builds the context of the loop `config` describes and every collaborator from it, each with
 * the one or two Redis ports it needs and the few other collaborators it calls.
 */
export function wireLoop(config: StreamConsumerConfig): LoopParts {
  const { client, stream, group, consumer, handlerName, options, logger } = config;
  const now = config.now ?? Date.now;
  const stopSwitch = new StopSwitch();
  const counters = new ConsumerCounters({ stream, group, consumer, handler: handlerName }, now);
  const context: LoopContext = {
    stream,
    group,
    consumer,
    handlerName,
    where: `${handlerName} on ${stream}/${group}`,
    options,
    logger,
    counters,
    signal: stopSwitch.signal,
    now,
    isStopping: stopSwitch.isStopping,
    isAbandoned: stopSwitch.isAbandoned,
    partition: config.partition,
  };

  // exactlyOnce: each message's `m.tx`, its writes committed in place of its XACK; on a Cluster
  // its publishes to other slots committed to the group's outbox, and forwarded from there
  const transactions = options.exactlyOnce
    ? new LoopTransactions(stream, group, client.commits?.cluster ?? false, () => outbox?.written())
    : undefined;
  const outbox =
    transactions?.outbox !== undefined && client.outboxes
      ? new OutboxForwarder(context, {
          outboxes: client.outboxes,
          outbox: transactions.outbox,
          windowMs: config.idempotencyWindowMs ?? MODULE_DEFAULTS.idempotencyWindowMs,
        })
      : undefined;
  const commitQueue = transactions
    ? new CommitQueue((message) => transactions.writesOf(message))
    : undefined;
  const traced = config.tracing ? config.tracing.wrap(config.handler) : config.handler;
  const handler = transactions ? transactions.wrap(traced) : traced;
  // dedup / newerWins: a filter before the handler, records written with the XACK; none when off
  const skipRules = skipRulesOf(options);
  // partitions: lanes by the entry's key; a failure waits for its retry outside the batch, the
  // later entries of its key parked behind it (docs/partitions.md "Order")
  const heldKeys: HeldKeys | undefined = config.partition
    ? new HeldKeys(context, {
        // its starts share the loop's concurrency and rate limit; its acks go through KeyAckGate
        run: (messages, entries, counts): Promise<void> =>
          delivery.processHeld(messages, entries, counts),
        stopped: async (failed, parked, counts): Promise<void> => {
          if (failed)
            await settlement.failed(
              [{ ...failed, claimedAt: now(), failedAt: now() }],
              [failed.entry],
            );
          await settlement.release(parked, counts, 'parked');
        },
        isPaused: (): boolean => pause.isPaused,
      })
    : undefined;
  // a partitioned handler's loops share one concurrency and rate limit (HandlerLimits)
  const limits =
    config.limits ??
    handlerLimits(options, client, stream, group, { signal: stopSwitch.signal, now });
  const limiter = limits.limiterFor(stopSwitch.signal);
  const health = new LoopHealth(context, client);
  const records = skipRules ? new AckRecords(skipRules) : undefined;
  // what a handled entry leaves for its XACK: its skip records, its exactly-once writes
  const handled: Pick<AckRecordSource, 'handled'> | undefined = commitQueue
    ? {
        handled: (messages, okIds): void => {
          records?.handled(messages, okIds);
          commitQueue.handled(messages, okIds);
        },
      }
    : records;
  // partitions and newerWins: lanes by key, a key's next entry started once the XACK of the one
  // before is in (docs/partitions.md "Order"); the slots of `concurrency` shared with held keys
  const keyOf = heldKeys ? (m: StreamMessage<unknown>) => m.key : skipRules?.keyOf;
  const keyAcks = keyOf
    ? new KeyAckGate(context, {
        acks: {
          add: (ids): void => acks.add(ids),
          flush: (): Promise<void> => acks.flush(),
        },
        records: handled,
        // a partition loop's XACKs leave with those of its handler's other loops
        turn: config.ackTurn ?? new AckTurn(client),
        health,
        // a read on the loop's own connection is answered before an XACK sent after it
        wakeRead: config.reader ? undefined : (): void => void parked.wakeForAck(),
      })
    : undefined;
  const lanes =
    keyOf && keyAcks
      ? new KeyLaneRunner(context, {
          keyOf,
          gate: keyAcks,
          slots: limits.slots,
          limiter,
          held: heldKeys,
        })
      : undefined;
  const runner = new HandlerRunner(
    context,
    handler,
    lanes,
    heldKeys ? new KeyRetry(context) : undefined,
    limiter,
  );
  const checkpoints = new Checkpoints(context, client.checkpoints);
  // deleteOnAck: every XACK removes its entries, a sweep what the last group to ack left
  const deletion = options.deleteOnAck
    ? new EntryDeletion(context, options.deleteOnAck, client.deletions)
    : undefined;
  // every XACK of the loop and what rides with it: a handled entry's checkpoint dropped, a dead
  // letter's or a deleted entry's whether this loop knows of it or not; with deleteOnAck, the
  // entries removed
  const ackWriter = new AckWriter(
    context,
    client,
    deletion ? [checkpoints, deletion] : [checkpoints],
  );
  const deadLetters = new DeadLetterPath(context, client, config.deadLetters, ackWriter);
  const scheduler = new RetryScheduler(context);
  // a partition loop sweeps when its handler's pending probe says so (docs/partitions.md)
  const pace: SweepSchedule =
    config.sweeps ??
    new SweepPace(options.claimIntervalMs, options.minIdleMs, now, config.sweepPhase);

  const heartbeat = new Heartbeat(context, client);
  heartbeat.keep('retries', scheduler.held);
  if (heldKeys) heartbeat.keep('heldKeys', new HeldEntries(() => heldKeys.ids(), now()));
  const skips =
    skipRules && records ? new SkipFilter(context, client, skipRules, records) : undefined;
  const acks = new AckBuffer(context, ackWriter, runner, {
    records,
    watch: keyAcks,
    commits: commitQueue ? { queue: commitQueue, health } : undefined,
  });
  const pause = new PauseGate(context, {
    probe:
      config.pauses ??
      (client.pauses
        ? new PauseWatch(client.pauses, group, now, (text) => context.logger.warn(text)).member(
            stream,
          )
        : NEVER_PAUSED),
    acks,
  });
  const settlement = new Settlement(context, {
    client,
    acks: ackWriter,
    deadLetters,
    heartbeat,
    waitingRetries: scheduler,
    errors: runner,
  });
  const delivery = new Delivery(context, {
    runner,
    heldKeys,
    settlement,
    acks,
    checkpoints,
    limiter,
    waitingRetries: scheduler,
    pace,
    heartbeat,
    health,
    tracing: config.tracing,
    skips,
    records: handled,
    transactions,
  });
  const pel = new PelSweep(context, { client, delivery, acks, settlement, limiter, keyAcks });
  const retries = new RetryClaims(context, {
    client,
    scheduler,
    limiter,
    settlement,
    delivery,
    health,
  });
  const readAhead = new ReadAhead(context, {
    client,
    heartbeat,
    health,
    settlement,
    // dedup / newerWins: its entries are sorted and looked up the moment they land, two reads
    // ahead so that a look-up is answered while the batch before its read is handled
    landed: skips ? (entries): void => delivery.prepare(entries) : undefined,
    depth: skips ? LOOK_UP_READS_AHEAD : 1,
  });
  const parked = new ParkedRead(
    config.reader ??
      new OwnConnectionRead(client, stream, group, consumer, readClaimIdleMs(context)),
  );
  const shutdown = new Shutdown(context, {
    stopSwitch,
    parked,
    heartbeat,
    delivery,
    acks,
    readAhead,
    settlement,
    scheduler,
    retries,
    deadLetters,
    records,
    // a shared connection is closed by its owner after every loop stopped; a loop that stops
    // before it (a partition handed over) stops listening to it
    closeClient: async () => {
      for (const unlisten of listening) unlisten?.();
      if (config.ownsClient !== false) await client.close();
    },
  });
  // a backoff does not outlast an outage: it ends when the connection is back
  const wake = (): void => health.wake();
  // nor a Cluster failover: a new slot map (a replica promoted) ends it, the streak starts over
  const topologyChanged = (): void => health.topologyChanged();
  const listening = [
    client.onReconnect?.(wake),
    config.reader?.onReconnect?.(wake),
    client.onTopologyChange?.(topologyChanged),
    config.reader?.onTopologyChange?.(topologyChanged),
  ];
  return {
    context,
    counters,
    stopSwitch,
    health,
    limiter,
    pace,
    pause,
    heartbeat,
    acks,
    delivery,
    heldKeys,
    pel,
    retries,
    readAhead,
    parked,
    shutdown,
    beside: [outbox, deletion].filter((each) => each !== undefined),
  };
}
