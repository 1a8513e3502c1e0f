import {
  isCluster,
  keySlot,
  type RedisConnection,
  CommandLink,
  DEFAULT_COMMAND_DEADLINE_MS,
  type ConnectionMonitor,
  createConnection,
  type ConnectionPurpose,
  type ConnectionTarget,
  TopologyWatch,
  ServerFeatures,
} from './connection';
import {
  RedisLifecycleClient,
  type LifecycleClient,
  StreamBrowser,
  RedisStreamQueries,
} from './operator';
import {
  RedisLoopCommands,
  RedisEntryCheckpoints,
  RedisGroupPauses,
  ParkedReads,
  RedisPendingProbes,
  RedisEntryCommits,
  RedisEntryDeletions,
} from './loop';
import { RedisPartitionLeases } from './partitions';
import type {
  BlockingReads,
  Browsing,
  StreamBrowsing,
  DurableWrites,
  KeyExpiry,
  SkipRecords,
  StreamQueries,
  StreamsClient,
  StreamWrites,
} from './stream-roles';
import {
  type IdempotentWrites,
  IdmpStreams,
  RedisStreamWrites,
  RedisTransactionOutboxes,
} from './publish';
import type { ServerFeatureMode, ServerFeatureReport } from '../interfaces/redis-server.interface';

// The names this file exported before the Redis layer was cut by role, kept so importers move at
// their own pace: the roles and their data (stream-roles.ts), the error predicates
// (redis-errors.ts: the engine imports them from there without loading ioredis), the deadline
// (command-link.ts) and the Cluster routing (cluster-routing.ts).
export type {
  AutoClaimPage,
  BlockingReads,
  ClientLink,
  ConsumerInfo,
  GroupPauses,
  DurableWrites,
  GroupInfo,
  LoopCommands,
  PendingQuery,
  PendingRow,
  RateBudgetGrant,
  RawEntry,
  ReplicatedWrite,
  StreamQueries,
  StreamsClient,
  StreamWrites,
  WriteItem,
} from './stream-roles';
export { parseEntry } from './connection';
export { isNoGroupError, isReplyError, isWrongTypeError, RedisDeadlineError } from './redis-errors';
export { withDeadline } from './connection';
export { isCluster, keySlot, type RedisConnection } from './connection';

/** How {@link RedisStreamsClient.open} sets up the client beside its connection. */
export interface OpenStreamsClientOptions {
  /**
   * A client on another connection to the same server(s) (the app's shared one): a parked read
   * of the new client is woken by `CLIENT UNBLOCK` sent over it. Without it, waking a parked read
   * drops the new client's connection.
   * @default undefined
   */
  wakeVia?: RedisStreamsClient;
  /**
   * Deadline of every non-blocking command.
   * @default 10000
   */
  commandDeadlineMs?: number;
  /**
   * The module option `serverFeatures`: `'baseline'` takes the Redis 7 path on any server.
   * @default 'auto'
   */
  serverFeatures?: ServerFeatureMode;
  /**
   * Where the client says what it chose to do differently than asked (a stream whose IDMP setup
   * an ACL refused publishes through the script); Nest's `Logger.warn` fits.
   * @default nothing is said
   */
  warn?: (message: string) => void;
}

/** The parameters of a role's method (optional members included). */
type Args<F> = F extends (...args: infer A) => unknown ? A : never;

/**
 * {@link StreamsClient} over one ioredis connection (single node or cluster): a facade whose
 * every command goes to the role that speaks it, all on one {@link CommandLink} (one deadline
 * rule). A consumer loop owns one of these on a dedicated connection, since a parked XREADGROUP
 * holds its connection; the producer and admin share another.
 *
 * On a Cluster every command names one key, so ioredis routes it to the master of that key's slot
 * and follows MOVED / ASK (XGROUP and XINFO, which ioredis's command table lists without a key,
 * reach a random master first and are redirected). Pipelines are split per slot. Keyless commands
 * (CLIENT ID / UNBLOCK, CONFIG GET) are sent to the node they concern.
 *
 * Its connection never leaves lib/redis: what a caller needs of it is a method here
 * (`open` with `wakeVia`, `slotKeyOf`, `browser`, `lifecycle`, `listenerCount`).
 */
export class RedisStreamsClient
  implements StreamsClient, DurableWrites, IdempotentWrites, Browsing, KeyExpiry
{
  private readonly commandLink: CommandLink;
  private readonly reads: BlockingReads;
  private readonly commands: RedisLoopCommands;
  private readonly writes: StreamWrites & DurableWrites & IdempotentWrites & KeyExpiry;
  private readonly queries: StreamQueries;
  /** The pause switch of groups (docs/operations.md "Pausing a group"), on this link. */
  readonly pauses: RedisGroupPauses;
  /** Checkpoints of entries (docs/delivery.md "Checkpoints"), on this link. */
  readonly checkpoints: RedisEntryCheckpoints;
  /** Partition counts and leases (docs/partitions.md), on this link. */
  readonly partitions: RedisPartitionLeases;
  /** The PELs of many partition streams in one script call per slot, on this link. */
  readonly pendingProbes: RedisPendingProbes;
  /** Exactly-once commits (docs/ARCHITECTURE.md "Exactly-once commits"), on this link. */
  readonly commits: RedisEntryCommits;
  /** The outboxes of exactly-once publishes to other Cluster slots, forwarded idempotently. */
  readonly outboxes: RedisTransactionOutboxes;
  /** `deleteOnAck: 'acked-by-all'`: the sweep of entries every group acknowledged, on this link. */
  readonly deletions: RedisEntryDeletions;
  /** The newer server's verbs (docs/compatibility.md "Server features"), asked once. */
  private readonly features: ServerFeatures;
  private readonly reconnectListeners = new Set<() => void>();
  private listeningForReady = false;
  /** On a Cluster, once a loop listens: tells when the slot map changed. */
  private topology: TopologyWatch | undefined;
  /** Why the connection is down, if it is: command errors name the cause and the address. */
  readonly link: ConnectionMonitor;

  /**
   * @param redis the connection; this client owns it and closes it in `close()`.
   * @param control another connection, used to `CLIENT UNBLOCK` a parked read.
   * @param commandDeadlineMs deadline of every non-blocking command.
   * @param serverFeatures the module option `serverFeatures`.
   * @param warn where a choice the client made on its own is said (`OpenStreamsClientOptions`).
   */
  constructor(
    private readonly redis: RedisConnection,
    control?: RedisConnection,
    commandDeadlineMs = DEFAULT_COMMAND_DEADLINE_MS,
    serverFeatures: ServerFeatureMode = 'auto',
    warn?: (message: string) => void,
  ) {
    this.commandLink = new CommandLink(redis, commandDeadlineMs);
    this.link = this.commandLink.monitor;
    this.features = new ServerFeatures(this.commandLink, serverFeatures);
    this.reads = new ParkedReads(this.commandLink, control, this.features);
    this.queries = new RedisStreamQueries(this.commandLink);
    this.commands = new RedisLoopCommands(this.commandLink, this.queries, this.features, warn);
    this.writes = new RedisStreamWrites(
      this.commandLink,
      new IdmpStreams(this.commandLink, this.features, warn),
    );
    this.pauses = new RedisGroupPauses(this.commandLink, isCluster(redis));
    this.checkpoints = new RedisEntryCheckpoints(this.commandLink);
    this.partitions = new RedisPartitionLeases(this.commandLink);
    this.pendingProbes = new RedisPendingProbes(this.commandLink, isCluster(redis));
    this.commits = new RedisEntryCommits(this.commandLink, isCluster(redis));
    this.deletions = new RedisEntryDeletions(this.commandLink, this.features);
    this.outboxes = new RedisTransactionOutboxes(this.queries, this.writes);
  }

  /**
   * Opens a connection for `purpose` (see `createConnection`) and the client that owns it (its
   * `close()` closes the connection): how code outside lib/redis gets a client.
   */
  static open(
    target: ConnectionTarget,
    purpose: ConnectionPurpose,
    onError: (err: Error) => void,
    options: OpenStreamsClientOptions = {},
  ): RedisStreamsClient {
    return new RedisStreamsClient(
      createConnection(target, purpose, onError),
      options.wakeVia?.redis,
      options.commandDeadlineMs,
      options.serverFeatures,
      options.warn,
    );
  }

  /** The newer server's verbs this connection's server answers and those the module uses. */
  serverFeatures(): Promise<ServerFeatureReport> {
    return this.features.report();
  }

  onReconnect(listener: () => void): () => void {
    // one 'ready' listener however many loops share this client (no MaxListeners warning)
    if (!this.listeningForReady) {
      this.listeningForReady = true;
      this.redis.on('ready', () => {
        for (const each of [...this.reconnectListeners]) each();
      });
    }
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  onTopologyChange(listener: () => void): () => void {
    if (!isCluster(this.redis)) return () => undefined; // one node: no slot map to change
    this.topology ??= new TopologyWatch(this.redis);
    return this.topology.onChange(listener);
  }

  /**
   * Which hash slot `stream` is in, as a string, on a Cluster (one XREADGROUP may only name keys
   * of one slot); `''` on a single node, where every key is in one partition.
   */
  slotKeyOf(stream: string): string {
    return isCluster(this.redis) ? String(keySlot(stream)) : '';
  }

  /** The read-only commands of the dashboard and the CLI (XREVRANGE, SCAN, ...), on this link. */
  browser(): StreamBrowsing {
    return new StreamBrowser(this.commandLink);
  }

  /** The commands of retention, archive, history and consumer cleanup, on this link. */
  lifecycle(): LifecycleClient {
    return new RedisLifecycleClient(this.commandLink, this.queries, this.partitions);
  }

  /** How many listeners the connection has for `event` (a leak check for the specs). */
  listenerCount(event: 'ready' | 'close' | 'error'): number {
    return this.redis.listenerCount(event);
  }

  readGroup(...args: Args<StreamsClient['readGroup']>) {
    return this.reads.readGroup(...args);
  }

  readGroups(...args: Args<StreamsClient['readGroups']>) {
    return this.reads.readGroups(...args);
  }

  interruptRead(...args: Args<StreamsClient['interruptRead']>) {
    return this.reads.interruptRead(...args);
  }

  createGroup(...args: Args<StreamsClient['createGroup']>) {
    return this.commands.createGroup(...args);
  }

  ack(...args: Args<StreamsClient['ack']>) {
    return this.commands.ack(...args);
  }

  together(send: () => void): void {
    this.commandLink.together(send);
  }

  autoClaim(...args: Args<StreamsClient['autoClaim']>) {
    return this.commands.autoClaim(...args);
  }

  takeOver(...args: Args<StreamsClient['takeOver']>) {
    return this.commands.takeOver(...args);
  }

  pending(...args: Args<StreamsClient['pending']>) {
    return this.commands.pending(...args);
  }

  pendingCount(...args: Args<StreamsClient['pendingCount']>) {
    return this.commands.pendingCount(...args);
  }

  claim(...args: Args<StreamsClient['claim']>) {
    return this.commands.claim(...args);
  }

  touch(...args: Args<StreamsClient['touch']>) {
    return this.commands.touch(...args);
  }

  reclaim(...args: Args<StreamsClient['reclaim']>) {
    return this.commands.reclaim(...args);
  }

  release(...args: Args<StreamsClient['release']>) {
    return this.commands.release(...args);
  }

  takeRateBudget(...args: Args<StreamsClient['takeRateBudget']>) {
    return this.commands.takeRateBudget(...args);
  }

  ackRecording(...args: Args<SkipRecords['ackRecording']>) {
    return this.commands.ackRecording(...args);
  }

  readRecords(...args: Args<SkipRecords['readRecords']>) {
    return this.commands.readRecords(...args);
  }

  add(...args: Args<StreamsClient['add']>) {
    return this.writes.add(...args);
  }

  addMany(...args: Args<StreamsClient['addMany']>) {
    return this.writes.addMany(...args);
  }

  addReplicated(...args: Args<DurableWrites['addReplicated']>) {
    return this.writes.addReplicated(...args);
  }

  addIdempotent(...args: Args<IdempotentWrites['addIdempotent']>) {
    return this.writes.addIdempotent(...args);
  }

  addIdempotentReplicated(...args: Args<IdempotentWrites['addIdempotentReplicated']>) {
    return this.writes.addIdempotentReplicated(...args);
  }

  expire(...args: Args<KeyExpiry['expire']>) {
    return this.writes.expire(...args);
  }

  /**
   * The connection itself, for the one contract that asks for it: `unwrap()` of Nest's transport
   * server and client (`lib/microservices/`). Commands sent on it bypass the link's deadline rule.
   */
  unwrap(): RedisConnection {
    return this.redis;
  }

  remove(...args: Args<StreamsClient['remove']>) {
    return this.writes.remove(...args);
  }

  range(...args: Args<StreamsClient['range']>) {
    return this.queries.range(...args);
  }

  length(...args: Args<StreamsClient['length']>) {
    return this.queries.length(...args);
  }

  groups(...args: Args<StreamsClient['groups']>) {
    return this.queries.groups(...args);
  }

  consumers(...args: Args<StreamsClient['consumers']>) {
    return this.queries.consumers(...args);
  }

  config(...args: Args<StreamsClient['config']>) {
    return this.queries.config(...args);
  }

  close(): Promise<void> {
    this.topology?.close();
    return this.commandLink.close();
  }
}
