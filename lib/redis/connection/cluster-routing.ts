import { Command, type Cluster, type Redis } from 'ioredis';

/** An ioredis connection: a single node or a cluster. Never handed outside lib/redis. */
export type RedisConnection = Redis | Cluster;

/** True when `redis` is an ioredis Cluster. */
export function isCluster(redis: RedisConnection): redis is Cluster {
  return (redis as Cluster).isCluster === true;
}

/** The hash slot of `key` (hash tags included), as ioredis routes it. */
export function keySlot(key: string): number {
  return new Command('xlen', [key]).getSlot();
}

/**
 * The node connection of `cluster` that serves `key`'s slot now (its master), or `undefined`
 * while the slot map is unknown. It is the very connection ioredis sends keyed commands on.
 */
export function nodeOf(cluster: Cluster, key: string): Redis | undefined {
  const nodeKey = cluster.slots[keySlot(key)]?.[0];
  return nodeKey === undefined ? undefined : nodeByKey(cluster, nodeKey);
}

/** The master connection of `cluster` named `nodeKey` (`host:port`), if it has one. */
export function nodeByKey(cluster: Cluster, nodeKey: string): Redis | undefined {
  return cluster.nodes('master').find((node) => nodeKeyOf(node) === nodeKey);
}

/** ioredis's name of a node: `host:port`. */
export function nodeKeyOf(node: Redis): string {
  return `${node.options.host}:${node.options.port}`;
}
