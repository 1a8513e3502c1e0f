import { AckBuffer } from './ack-buffer';
import { AckRecords } from './ack-records';
import { OwnConnectionRead } from './blocking-read';
import { Checkpoints } from './checkpoints';
import { ConsumerCounters } from './consumer-counters';
import type { StreamConsumerConfig } from './consumer.types';
import { DeadLetterPath } from './dead-letter-path';
import { Delivery } from './delivery';
import { HandlerRunner } from './handler-runner';
import { KeyRetry } from './key-retry';
import { HeldEntries, Heartbeat } from './heartbeat';
import { HeldKeys } from './held-keys';
import { LoopHealth } from './loop-health';
import type { LoopContext } from './loop.types';
import { ParkedRead } from './parked-read';
import { PauseGate } from './pause-gate';
import { NEVER_PAUSED, PauseWatch } from './pause-watch';
import { PelSweep } from './pel-sweep';
import { rateLimiterFor, type StartLimiter } from './rate-limiter';
import { ReadAhead } from './read-ahead';
import { RetryClaims } from './retry-claims';
import { RetryScheduler } from './retry-scheduler';
import { Settlement } from './settlement';
import { SkipFilter } from './skip-filter';
import { skipRulesOf } from './skip-rules';
import { Shutdown, StopSwitch } from './shutdown';
import { SweepPace } from './sweep-pace';

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
  readonly pace: SweepPace;
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

  const handler = config.tracing ? config.tracing.wrap(config.handler) : config.handler;
  // dedup / newerWins: a filter before the handler, records written with the XACK; none when off
  const skipRules = skipRulesOf(options);
  // partitions: lanes by the entry's key; a failure waits for its retry outside the batch, the
  // later entries of its key parked behind it (docs/partitions.md "Order")
  const heldKeys: HeldKeys | undefined = config.partition
    ? new HeldKeys(context, {
        // its acks go out with the loop's next read (a park ends within claimIntervalMs)
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
  const runner = heldKeys
    ? new HandlerRunner(context, handler, (m) => m.key, {
        retry: new KeyRetry(context),
        held: heldKeys,
      })
    : new HandlerRunner(context, handler, skipRules?.keyOf);
  const checkpoints = new Checkpoints(context, client.checkpoints);
  // a dead letter or a deleted entry leaves with its checkpoint, known here or not
  const exits = { alongAck: (ids: readonly string[]) => checkpoints.alongExit(ids) };
  const deadLetters = new DeadLetterPath(context, client, config.deadLetters, [exits]);
  const scheduler = new RetryScheduler(context);
  const limiter = rateLimiterFor(options.rateLimit, client, stream, group, {
    signal: stopSwitch.signal,
    now,
  });
  const pace = new SweepPace(options.claimIntervalMs, options.minIdleMs, now, config.sweepPhase);
  const health = new LoopHealth(context, client);

  const heartbeat = new Heartbeat(context, client);
  heartbeat.keep('retries', scheduler.held);
  if (heldKeys) heartbeat.keep('heldKeys', new HeldEntries(() => heldKeys.ids(), now()));
  const records = skipRules ? new AckRecords(skipRules) : undefined;
  const skips = skipRules ? new SkipFilter(context, client, skipRules) : undefined;
  const acks = new AckBuffer(context, client, runner, { records, along: [checkpoints] });
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
    along: [exits],
    deadLetters,
    heartbeat,
    retries: scheduler,
    errors: runner,
  });
  const delivery = new Delivery(context, {
    runner,
    heldKeys,
    settlement,
    acks,
    checkpoints,
    limiter,
    retries: scheduler,
    pace,
    heartbeat,
    health,
    tracing: config.tracing,
    skips,
    records,
  });
  const pel = new PelSweep(context, { client, delivery, acks, settlement, limiter });
  const retries = new RetryClaims(context, {
    client,
    scheduler,
    limiter,
    settlement,
    delivery,
    health,
  });
  const readAhead = new ReadAhead(context, { client, heartbeat, health, settlement });
  const parked = new ParkedRead(
    config.reader ?? new OwnConnectionRead(client, stream, group, consumer),
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
    // a shared connection is closed by its owner after every loop stopped
    closeClient: async () => {
      if (config.ownsClient !== false) await client.close();
    },
  });
  // a backoff does not outlast an outage: it ends when the connection is back
  const wake = (): void => health.wake();
  client.onReconnect?.(wake);
  config.reader?.onReconnect?.(wake);
  // nor a Cluster failover: a new slot map (a replica promoted) ends it, the streak starts over
  const topologyChanged = (): void => health.topologyChanged();
  client.onTopologyChange?.(topologyChanged);
  config.reader?.onTopologyChange?.(topologyChanged);
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
  };
}
