/**
 * The lifecycle's timer runners (lib/lifecycle/handler-cleanups.ts, stream-retentions.ts), shared
 * by the module and the microservices transport, with a recording client: no Redis.
 */
import { resolveHandlerOptions } from '../../lib/config/module-options';
import { HandlerCleanups } from '../../lib/lifecycle/handler-cleanups';
import { StreamRetentions } from '../../lib/lifecycle/stream-retentions';
import type { LifecycleClient } from '../../lib/redis/operator/lifecycle-client';
import { sleep, waitFor } from '../support/wait-for';

function recordingClient() {
  const calls: string[] = [];
  const client = {
    touchConsumer: (stream: string, group: string, self: string) => {
      calls.push(`touch ${stream}/${group} ${self}`);
      return Promise.resolve();
    },
    consumers: (stream: string, group: string) => {
      calls.push(`consumers ${stream}/${group}`);
      return Promise.resolve([{ name: 'gone', pending: 0, idleMs: 5000 }]);
    },
    deleteIdleConsumer: (stream: string, group: string, name: string) => {
      calls.push(`delete ${stream}/${group} ${name}`);
      return Promise.resolve('deleted');
    },
  } as unknown as LifecycleClient;
  return { client, calls };
}

const handler = (stream: string, consumerCleanup: { idleMs: number } | false) => ({
  stream,
  group: 'g',
  resolved: resolveHandlerOptions(stream, 'test', {}, { consumerCleanup }),
});

describe('HandlerCleanups', () => {
  it('touches its consumer and deletes idle ones per handler; a handler with cleanup off is only touched; stop() ends the timers', async () => {
    const { client, calls } = recordingClient();
    const cleanups = new HandlerCleanups(
      [handler('on', { idleMs: 1000 }), handler('off', false)],
      'me',
    );
    expect(cleanups.empty).toBe(false);
    cleanups.start(client);
    await waitFor(() => calls.includes('delete on/g gone') && calls.includes('touch on/g me'), {
      timeoutMs: 3000,
      message: 'the cleanup of on/g ran',
    });
    await cleanups.stop();
    const after = calls.length;
    await sleep(700);
    expect(calls.length).toBe(after);
    expect(calls.filter((c) => c.includes('off/g') && !c.startsWith('touch'))).toEqual([]);
    expect(new HandlerCleanups([], 'me').empty).toBe(true);
  });
});

describe('StreamRetentions', () => {
  it('reports a rule that never ran as zeros, and refuses a stream without a rule by name', () => {
    const retentions = new StreamRetentions({
      rules: [{ stream: 'a', maxLen: 5, maxAgeMs: null, ignoreGroups: [] }],
      intervalMs: 1000,
      consumerName: 'me',
      archiveOf: () => undefined,
    });
    expect(retentions.empty).toBe(false);
    expect(retentions.reports()).toEqual([
      {
        stream: 'a',
        trimmedTotal: 0,
        heldBackBy: null,
        oldestEntryId: null,
        length: 0,
        lastRunAt: null,
      },
    ]);
    expect(() => retentions.report('b')).toThrow('no retention rule for stream "b" (rules: \'a\')');
  });
});
