/**
 * The harness runs the server `ECHO_SERVER` names (scripts/lib/echo-server.mjs): a plain server, a
 * replica of it and a restarted server all answer INFO server as that build. Run under each
 * name by `npm run test:servers`; under the default it checks that nothing changed.
 */
import { FETCHED_SERVERS, chosenServer } from '../../scripts/lib/echo-server.mjs';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';

/** `{ product, version }` from INFO server (Valkey keeps `redis_version` at 7.2.4 for clients). */
function build(info: string): { product: 'Valkey' | 'Redis'; version: string } {
  const field = (name: string) => new RegExp(`^${name}:(\\S+)`, 'm').exec(info)?.[1];
  const valkey = field('valkey_version');
  if (field('server_name') === 'valkey' && valkey) return { product: 'Valkey', version: valkey };
  return { product: 'Redis', version: field('redis_version') ?? '' };
}

describe('the server the harness starts', () => {
  afterAll(() => stopAllRedisServers());

  const name = chosenServer();

  it(`is the build ECHO_SERVER names (${name}), for a master, its replica and after a restart`, async () => {
    // no diskless-sync delay: the replica syncs at once instead of after 5 s
    const master = await RedisServer.start({ extraArgs: ['--repl-diskless-sync-delay', '0'] });
    const replica = await RedisServer.start({ replicaOf: master });
    await master.waitReplicas(1);
    await master.restart();
    const seen: Array<ReturnType<typeof build>> = [];
    for (const server of [master, replica]) {
      const c = server.client();
      seen.push(build(await c.info('server')));
      c.disconnect();
    }
    for (const b of seen) {
      if (name === 'redis7') {
        // the redis-server on PATH: whatever Redis it is, not a Valkey
        expect(b.product).toBe('Redis');
      } else {
        const want = FETCHED_SERVERS[name];
        expect(b.product).toBe(want.product);
        expect(b.version.startsWith(`${want.series}.`)).toBe(true);
      }
    }
  });
});
