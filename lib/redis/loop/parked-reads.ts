import type { Redis } from 'ioredis';
import {
  isCluster,
  nodeByKey,
  nodeKeyOf,
  nodeOf,
  type RedisConnection,
  type CommandLink,
  parseReadReplies,
  type ServerFeatures,
  parseReadReply,
} from '../connection';
import { isReplyError } from '../redis-errors';
import { stallMarginMs, type BlockingReads, type RawEntry } from '../stream-roles';

/**
 * {@link BlockingReads} on one link: XREADGROUP, parked (BLOCK) or not, and its wake-up by
 * CLIENT UNBLOCK sent over a control connection (another connection to the same server).
 *
 * A parked read gets the deadline `blockMs` + its margin ({@link stallMarginMs} unless the caller
 * names one): past it the link is taken for half-open and replaced (the command link's rule). On a Cluster the read goes to the master of
 * its stream's slot, so the CLIENT ID an UNBLOCK needs is that node connection's, and the UNBLOCK
 * goes to the same node over the control cluster.
 */
export class ParkedReads implements BlockingReads {
  /** Single node: CLIENT ID of the link (`null`: not allowed, `undefined`: not learned yet). */
  private connectionId: number | null | undefined;
  /** Cluster: CLIENT ID of each node connection of the link (`null`: not allowed). */
  private readonly nodeIds = new WeakMap<Redis, number | null>();
  /** Cluster: the node connection the parked read was sent on (the master of its slot). */
  private parkedNode: Redis | undefined;
  private parked = false;

  /**
   * @param link the connection the reads park on.
   * @param control another connection, used to `CLIENT UNBLOCK` a parked read.
   * @param features the server's verbs: a read of new entries with `claimIdleMs` claims idle
   *   entries along (CLAIM) where the server has it.
   */
  constructor(
    private readonly link: CommandLink,
    private readonly control?: RedisConnection,
    private readonly features?: ServerFeatures,
  ) {
    // The id a CLIENT UNBLOCK needs changes with every reconnect.
    link.connection.on('close', () => (this.connectionId = undefined));
  }

  async readGroup(
    stream: string,
    group: string,
    consumer: string,
    count: number,
    id: string,
    blockMs?: number,
    marginMs?: number,
    claimIdleMs?: number,
  ): Promise<RawEntry[]> {
    const head = this.head(group, consumer, count, id === '>' ? claimIdleMs : undefined);
    const tail = ['STREAMS', stream, id];
    if (blockMs === undefined) return parseReadReply(await this.link.send([...head, ...tail]));
    return parseReadReply(await this.parkedCall(head, tail, stream, blockMs, { marginMs }));
  }

  async readGroups(
    group: string,
    consumer: string,
    count: number,
    streams: readonly string[],
    blockMs?: number,
    uninterruptibleMs?: number,
    marginMs?: number,
    claimIdleMs?: number,
  ): Promise<Map<string, RawEntry[]>> {
    const head = this.head(group, consumer, count, claimIdleMs);
    const tail = ['STREAMS', ...streams, ...streams.map(() => '>')];
    if (blockMs === undefined) return parseReadReplies(await this.link.send([...head, ...tail]));
    return parseReadReplies(
      await this.parkedCall(head, tail, streams[0], blockMs, { uninterruptibleMs, marginMs }),
    );
  }

  /**
   * `XREADGROUP GROUP group consumer COUNT count`, then `CLAIM claimIdleMs` when asked and the
   * server has it (docs/compatibility.md "Server features"): idle pending entries of the group
   * come first in the reply, with their delivery counts.
   */
  private head(
    group: string,
    consumer: string,
    count: number,
    claimIdleMs: number | undefined,
  ): Array<string | number> {
    const head: Array<string | number> = ['XREADGROUP', 'GROUP', group, consumer, 'COUNT', count];
    if (claimIdleMs !== undefined && this.features?.uses('CLAIM')) head.push('CLAIM', claimIdleMs);
    return head;
  }

  async interruptRead(mayDrop = true): Promise<void> {
    if (!this.parked) return;
    const target = this.unblockTarget();
    if (target) {
      try {
        await this.link.sendBeside(target.via, ['CLIENT', 'UNBLOCK', String(target.id)]);
        return;
      } catch {
        // fall through: dropping the connection also ends the read
      }
    }
    if (!mayDrop) return;
    // On a Cluster this drops every node connection (a dropped node alone would have the read
    // retried elsewhere); the read rejects and the cluster reconnects.
    this.link.drop();
  }

  /**
   * Sends `head BLOCK ms tail`, a read that parks (`stream`: one it names, for its Cluster node);
   * `interruptRead` wakes it. Where it could not (CLIENT ID refused), it parks at most
   * `uninterruptibleMs`, when given. Its reply may come `marginMs` late (default: the margin of
   * the block it is sent with).
   */
  private async parkedCall(
    head: Array<string | number>,
    tail: string[],
    stream: string,
    blockMs: number,
    { uninterruptibleMs, marginMs }: { uninterruptibleMs?: number; marginMs?: number },
  ): Promise<unknown> {
    if (this.control) await this.learnConnectionId(stream);
    let block = blockMs;
    if (uninterruptibleMs !== undefined && this.unblockTarget() === undefined)
      block = Math.min(block, uninterruptibleMs);
    this.parked = true;
    try {
      // NOTE: the margin covers a slow server; past it the link is taken for half-open.
      return await this.link.send(
        [...head, 'BLOCK', block, ...tail],
        block + (marginMs ?? stallMarginMs(block)),
      );
    } finally {
      this.parked = false;
    }
  }

  /**
   * Learns the CLIENT ID a CLIENT UNBLOCK of the coming read on `stream` needs: the id of the
   * link, or on a Cluster the id of the node connection serving the stream's slot (learned once
   * per node connection). One round trip per new connection, none per read.
   */
  private async learnConnectionId(stream: string): Promise<void> {
    const redis = this.link.connection;
    if (!isCluster(redis)) {
      if (this.connectionId !== undefined) return;
      try {
        this.connectionId = Number(await this.link.send(['CLIENT', 'ID']));
      } catch (err) {
        // not allowed (ACL): interrupts drop the link; a link failure: learn it on the next read
        if (isReplyError(err)) this.connectionId = null;
      }
      return;
    }
    const node = nodeOf(redis, stream);
    this.parkedNode = node;
    if (!node || this.nodeIds.has(node)) return;
    try {
      const id = Number(await this.link.sendBeside(node, ['CLIENT', 'ID']));
      this.nodeIds.set(node, id);
      // the id changes if this node connection reconnects (a clusterNodeRetryStrategy)
      node.once('close', () => this.nodeIds.delete(node));
    } catch (err) {
      if (isReplyError(err)) this.nodeIds.set(node, null);
    }
  }

  /** Where to send CLIENT UNBLOCK for the parked read: another connection to its server. */
  private unblockTarget(): { via: RedisConnection; id: number } | undefined {
    const control = this.control;
    if (!control) return undefined;
    if (!isCluster(this.link.connection)) {
      return typeof this.connectionId === 'number'
        ? { via: control, id: this.connectionId }
        : undefined;
    }
    const node = this.parkedNode;
    const id = node && this.nodeIds.get(node);
    if (!node || typeof id !== 'number') return undefined;
    // CLIENT ids are per server: the UNBLOCK must reach the same node, over the control cluster.
    const via = isCluster(control) ? nodeByKey(control, nodeKeyOf(node)) : undefined;
    return via ? { via, id } : undefined;
  }
}
