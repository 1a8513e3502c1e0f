import type { CommandLink } from '../connection';
import {
  LEASE_ACQUIRE_SCRIPT,
  LEASE_HEARTBEAT_SCRIPT,
  LEASE_RELEASE_SCRIPT,
  scriptSha,
} from './partition-leases.script';
import { leaseKeyOf, memberKeyOf, partitionCountKeyOf } from '../package-keys';
import type { LeaseRow, LeaseView, PartitionLeases } from './partition-roles';

const SHAS = new Map<string, string>();

/**
 * The partition count and leases of partitioned streams (docs/partitions.md), over one link: the
 * count in a string key, the leases and members of a group in a hash and a sorted set, all three
 * in the hash slot of the stream's name.
 */
export class RedisPartitionLeases implements PartitionLeases {
  constructor(private readonly link: CommandLink) {}

  async ensureCount(stream: string, count: number): Promise<number> {
    const key = partitionCountKeyOf(stream);
    await this.link.send(['SET', key, String(count), 'NX']);
    return Number(await this.link.send(['GET', key]));
  }

  async storedCount(stream: string): Promise<number | null> {
    const value = (await this.link.send(['GET', partitionCountKeyOf(stream)])) as string | null;
    return value === null || value === undefined ? null : Number(value);
  }

  async heartbeat(
    stream: string,
    group: string,
    member: string,
    count: number,
    leaseMs: number,
    held: readonly number[],
  ): Promise<LeaseView> {
    const keys = [leaseKeyOf(stream, group), memberKeyOf(stream, group)];
    const args = [member, leaseMs, count, ...held];
    const reply = (await this.run(LEASE_HEARTBEAT_SCRIPT, keys, args)) as [
      string[],
      Array<string | number>,
    ];
    const [members, flat] = reply;
    const owners: Array<{ owner: string | null; generation: number }> = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const owner = String(flat[i]);
      owners.push({ owner: owner === '' ? null : owner, generation: Number(flat[i + 1]) });
    }
    return { members: members.map(String), owners };
  }

  async acquire(
    stream: string,
    group: string,
    member: string,
    leaseMs: number,
    partitions: readonly number[],
  ): Promise<number[]> {
    if (partitions.length === 0) return [];
    const reply = (await this.run(
      LEASE_ACQUIRE_SCRIPT,
      [leaseKeyOf(stream, group)],
      [member, leaseMs, ...partitions],
    )) as number[];
    return reply.map(Number);
  }

  async release(
    stream: string,
    group: string,
    member: string,
    partitions: readonly number[],
    leave: boolean,
  ): Promise<number> {
    const keys = [leaseKeyOf(stream, group), memberKeyOf(stream, group)];
    return Number(
      await this.run(LEASE_RELEASE_SCRIPT, keys, [member, leave ? '1' : '0', ...partitions]),
    );
  }

  async table(stream: string, group: string, count: number): Promise<LeaseRow[]> {
    const [flat, time] = (await Promise.all([
      this.link.send(['HGETALL', leaseKeyOf(stream, group)]),
      this.link.send(['TIME']),
    ])) as [string[], [string, string]];
    const fields = new Map<string, string>();
    for (let i = 0; i + 1 < flat.length; i += 2) fields.set(flat[i], flat[i + 1]);
    const now = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    return Array.from({ length: count }, (_, partition) => {
      const owner = fields.get(`o:${partition}`) ?? '';
      const leftMs = Math.max(0, Number(fields.get(`e:${partition}`) ?? 0) - now);
      return {
        partition,
        owner: owner === '' || leftMs === 0 ? null : owner,
        generation: Number(fields.get(`g:${partition}`) ?? 0),
        leftMs: owner === '' ? 0 : leftMs,
      };
    });
  }

  /** EVALSHA, and EVAL when the server does not have the script yet. */
  private async run(
    script: string,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown> {
    let sha = SHAS.get(script);
    if (sha === undefined) SHAS.set(script, (sha = scriptSha(script)));
    return this.link.sendScript(script, sha, [keys.length, ...keys, ...args]);
  }
}
