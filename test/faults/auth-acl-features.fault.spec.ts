/**
 * The minimal ACL of partitioned handlers, `rateLimit: { scope: 'group' }` and `dedup` /
 * `newerWins` (docs/operations.md "Redis ACL"), checked against the server's ACL LOG: a user with
 * the plain consumer's rules (auth-acl.fault.spec.ts) plus the documented rules and key patterns
 * of these options (and of the consumer cleanup, on the partitioned handler) runs everything
 * clean, for stream names without and with a hash tag. Each rule and pattern was seen needed once
 * (dropped, the ACL LOG names it). States only (stages, the PEL, the ACL LOG): no wall-clock
 * bound.
 */
import type { Redis } from 'ioredis';
import { RedisServer } from '../support/redis-server';
import {
  ACL_FEATURES,
  aclFeatureStreams,
  consumerKeyPatterns,
  featureRules,
  runAclFeatureScenario,
  streamFeatures,
  type AclFeatureStreams,
} from './support/acl-features-scenario';
import { RECOMMENDED_CONSUMER_ACL, REQUIRED_CONSUMER_ACL } from './support/acl-scenario';
import { report, stopLoopsAndServersAfterEach } from './support/in-process-loop';

stopLoopsAndServersAfterEach();

/** A user with nothing but `rules` on the documented key patterns of `streams`. */
async function consumerUser(admin: Redis, streams: AclFeatureStreams, rules: string[]) {
  const patterns = streamFeatures(streams, ACL_FEATURES).flatMap(({ stream, features }) =>
    consumerKeyPatterns(stream, features),
  );
  await admin.acl(
    'SETUSER',
    'consumer',
    'reset',
    'on',
    '>pw',
    'resetchannels',
    '-@all',
    ...patterns,
    ...rules,
  );
  return patterns;
}

// CLIENT SETINFO (sent by ioredis, known to Redis >= 7.2 only) is swallowed like CLIENT SETNAME
const notSetinfo = (denied: string) => denied !== 'command:client|setinfo';

describe('the minimal ACL of partitioned streams, group rate limits and skip records', () => {
  for (const form of ['plain', 'tagged'] as const) {
    const streams = aclFeatureStreams(form);
    it(`${form} names (${streams.partitioned}): leases, probes, take-over, rate budget, acks with records and their look-ups run clean; nothing denied, nothing pending`, async () => {
      // Invariant: with exactly the documented rules and key patterns every handler runs its
      // entries (a dead peer's taken over), a copy and an older entry are skipped on the
      // records, nothing stays pending, the consumer cleanup deletes the idle peer, the app logs
      // no problem and the ACL LOG (scripts' calls included) holds no denial.
      const server = await RedisServer.start();
      const admin = server.client();
      const rules = [
        ...REQUIRED_CONSUMER_ACL,
        ...RECOMMENDED_CONSUMER_ACL,
        ...featureRules(ACL_FEATURES),
      ];
      const patterns = await consumerUser(admin, streams, rules);
      const run = await runAclFeatureScenario(server, admin, 'consumer', 'pw', streams);
      expect(run.denied.filter(notSetinfo)).toEqual([]);
      expect(run.failedStage).toBeUndefined();
      expect(run.stages).toEqual([
        'handled',
        'nothing pending',
        'skipped',
        'skips counted',
        'nothing pending after the skips',
        'idle peer deleted',
      ]);
      expect(run.problems).toEqual([]);
      expect(run.skipped.get(streams.skipping)).toEqual({ duplicates: 1, stale: 1 });
      expect(run.skipped.get(streams.partitioned)).toEqual({ duplicates: 1, stale: 0 });
      report(
        `ACL of options (${form})`,
        `${featureRules(ACL_FEATURES).join(' ')} on ${patterns.join(' ')}: clean`,
      );
    });
  }
});
