/**
 * Keyed lanes wired as the loop wires them (lib/consumer/loop/loop-wiring.ts), for unit tests: the
 * loop's one AckBuffer on a FakeStreamsClient, the KeyAckGate watching it, the StartSlots of
 * `concurrency` and a KeyLaneRunner over them. The fake's XACK can be held on the wire
 * ({@link KeyedLanes.holdAcks}) and every step is logged in order ({@link KeyedLanes.log}).
 */
import { AckWriter } from '../../lib/consumer/settle/ack-writer';
import { AckTurn } from '../../lib/consumer/order/ack-turn';
import { AckBuffer } from '../../lib/consumer/settle/ack-buffer';
import type { HeldKeys } from '../../lib/consumer/order/held-keys';
import { KeyAckGate } from '../../lib/consumer/order/key-ack-gate';
import { KeyLaneRunner } from '../../lib/consumer/order/key-lane-runner';
import { NO_RATE_LIMIT, type StartLimiter } from '../../lib/consumer/limits/rate-limiter';
import { StartSlots } from '../../lib/consumer/limits/start-slots';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import { FakeStreamsClient } from './fake-streams-client';
import { G, S, type TestLoop } from './loop-context';
import { NO_TRANSACTION } from '../../lib/consumer/commit';

/** A message of `key` (its `entryId` is also its branded id). */
export function keyed(entryId: string, key: string | undefined, attempts = 1) {
  return {
    id: entryId,
    entryId,
    key,
    stream: S,
    group: G,
    consumer: 'c1',
    payload: {},
    attempts,
    signal: new AbortController().signal,
    saveCheckpoint: async () => undefined,
    tx: NO_TRANSACTION,
  } as StreamMessage<unknown>;
}

export const keyOfMessage = (m: StreamMessage<unknown>): string | undefined => m.key;

export interface KeyedLanes {
  fake: FakeStreamsClient;
  acks: AckBuffer;
  gate: KeyAckGate;
  slots: StartSlots;
  runner: KeyLaneRunner;
  /** `start X`, `end X`, `xack a,b` (sent), `acked a,b` (reply in), `xack-failed a,b`. */
  log: string[];
  /** How many times the gate asked for a drain of the own PEL. */
  drains(): number;
  /** Every XACK reply is held this many ms (0: at once). */
  holdAcks(ms: number): void;
}

export function keyedLanes(
  loop: TestLoop,
  parts: {
    limiter?: StartLimiter;
    held?: Pick<HeldKeys, 'divert' | 'hold'>;
    keyOf?: (m: StreamMessage<unknown>) => string | undefined;
  } = {},
): KeyedLanes {
  const fake = new FakeStreamsClient();
  const log: string[] = [];
  let drains = 0;
  let ackDelayMs = 0;
  const gate: KeyAckGate = new KeyAckGate(loop.context, {
    acks: { add: (ids) => acks.add(ids), flush: () => acks.flush() },
    turn: new AckTurn({}),
    health: { drainNeeded: () => void drains++ },
  });
  const watch = {
    acked: (ids: readonly string[]) => {
      log.push(`acked ${ids.join(',')}`);
      gate.acked(ids);
    },
    failed: (ids: readonly string[], error: unknown) => {
      log.push(`xack-failed ${ids.join(',')}`);
      gate.failed(ids, error);
    },
  };
  const acks = new AckBuffer(
    loop.context,
    new AckWriter(loop.context, fake),
    { forget: () => undefined },
    { watch },
  );
  fake.overrides.ack = (_stream, _group, ids) => {
    log.push(`xack ${ids.join(',')}`);
    return new Promise((resolve) => setTimeout(() => resolve(ids.length), ackDelayMs));
  };
  const slots = new StartSlots(loop.context.options.concurrency);
  const runner = new KeyLaneRunner(loop.context, {
    keyOf: parts.keyOf ?? keyOfMessage,
    gate,
    slots,
    limiter: parts.limiter ?? NO_RATE_LIMIT,
    held: parts.held,
  });
  return {
    fake,
    acks,
    gate,
    slots,
    runner,
    log,
    drains: () => drains,
    holdAcks: (ms) => void (ackDelayMs = ms),
  };
}
