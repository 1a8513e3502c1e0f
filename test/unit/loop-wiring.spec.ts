/** Wiring one loop (lib/consumer/loop/loop-wiring.ts): one context, every step built from it. */
import { jest } from '@jest/globals';
import type { StreamConsumerConfig } from '../../lib/consumer/loop/loop-config';
import { wireLoop } from '../../lib/consumer/loop/loop-wiring';
import { NO_RATE_LIMIT } from '../../lib/consumer/limits/rate-limiter';
import { resolveHandlerOptions } from '../../lib/config/module-options';
import type { StreamHandlerOptions } from '../../lib/interfaces/stream-handler-options.interface';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { LineLogger } from '../support/loop-context';

function config(
  client: FakeStreamsClient,
  options: Partial<StreamHandlerOptions> = {},
  extra: Partial<StreamConsumerConfig> = {},
): StreamConsumerConfig {
  return {
    stream: 's',
    group: 'g',
    consumer: 'c',
    handlerName: 'T.h',
    options: resolveHandlerOptions('s', 'test', {}, options),
    client,
    handler: { batch: false, call: () => undefined },
    deadLetters: { handlerCount: 0, deliver: async () => undefined },
    logger: new LineLogger(),
    ...extra,
  };
}

describe('wireLoop', () => {
  it('builds one context: where, counters and the stop switch are the ones every step sees', () => {
    const parts = wireLoop(config(new FakeStreamsClient()));
    expect(parts.context.where).toBe('T.h on s/g');
    expect(parts.context.signal).toBe(parts.stopSwitch.signal);
    parts.context.counters.read(3);
    expect(parts.counters.snapshot().totalRead).toBe(3);
    expect(parts.context.isStopping()).toBe(false);
    parts.stopSwitch.stop();
    expect(parts.context.isStopping()).toBe(true);
    expect(parts.context.signal.aborted).toBe(true);
    parts.stopSwitch.abandon();
    expect(parts.context.isAbandoned()).toBe(true);
  });

  it('no rateLimit: the limiter that always allows; a rateLimit: one that limits', () => {
    expect(wireLoop(config(new FakeStreamsClient())).limiter).toBe(NO_RATE_LIMIT);
    const limited = wireLoop(
      config(new FakeStreamsClient(), { rateLimit: { max: 5, perMs: 1000 } }),
    );
    expect(limited.limiter.limits).toBe(true);
  });

  it('the stop closes the connection it owns, never a shared one', async () => {
    const own = new FakeStreamsClient();
    await wireLoop(config(own)).shutdown.run(null, 100);
    expect(own.closed).toBe(true);
    const shared = new FakeStreamsClient();
    await wireLoop(config(shared, {}, { ownsClient: false })).shutdown.run(null, 100);
    expect(shared.closed).toBe(false);
  });

  it('a reconnect of the client or of the reader cuts a backoff short', async () => {
    const listeners: Array<() => void> = [];
    const client = new FakeStreamsClient();
    Object.assign(client, { onReconnect: (listener: () => void) => listeners.push(listener) });
    const reader = {
      read: async () => [],
      interrupt: async () => undefined,
      onReconnect: (listener: () => void) => void listeners.push(listener),
    };
    const parts = wireLoop(config(client, {}, { reader }));
    expect(listeners).toHaveLength(2);
    jest.useFakeTimers();
    try {
      for (const listener of listeners) {
        let done = false;
        const backOff = parts.health.backOff(new Error('down')).then(() => void (done = true));
        await jest.advanceTimersByTimeAsync(10);
        expect(done).toBe(false);
        listener();
        await jest.advanceTimersByTimeAsync(0);
        expect(done).toBe(true);
        await backOff;
      }
    } finally {
      jest.useRealTimers();
    }
  });

  it('a loop that stops before its shared connection (a partition handed over) stops listening to it', async () => {
    // one entry per registration (the client and the reader may get the same function)
    const listening: Array<() => void> = [];
    const listen = (listener: () => void) => {
      const entry = () => listener();
      listening.push(entry);
      return () => void listening.splice(listening.indexOf(entry), 1);
    };
    const client = new FakeStreamsClient();
    Object.assign(client, { onReconnect: listen, onTopologyChange: listen });
    const reader = { read: async () => [], interrupt: async () => undefined, onReconnect: listen };
    const parts = wireLoop(config(client, {}, { reader, ownsClient: false }));
    expect(listening).toHaveLength(3);
    await parts.shutdown.run(null, 100);
    expect(listening).toHaveLength(0);
    expect(client.closed).toBe(false);
  });

  it('a new Cluster slot map of the client or of the reader ends a backoff', async () => {
    const listeners: Array<() => void> = [];
    const client = new FakeStreamsClient();
    Object.assign(client, {
      onTopologyChange: (listener: () => void) => listeners.push(listener),
    });
    const reader = {
      read: async () => [],
      interrupt: async () => undefined,
      onTopologyChange: (listener: () => void) => void listeners.push(listener),
    };
    const parts = wireLoop(config(client, {}, { reader }));
    expect(listeners).toHaveLength(2);
    jest.useFakeTimers();
    try {
      for (const listener of listeners) {
        let done = false;
        const backOff = parts.health.backOff(new Error('down')).then(() => void (done = true));
        await jest.advanceTimersByTimeAsync(10);
        expect(done).toBe(false);
        listener();
        await jest.advanceTimersByTimeAsync(0);
        expect(done).toBe(true);
        await backOff;
        expect(parts.health.recovering).toBe(false);
      }
    } finally {
      jest.useRealTimers();
    }
  });
});
