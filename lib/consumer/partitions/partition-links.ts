import type { StreamsClient } from '../../redis/stream-roles';
import {
  NEVER_PAUSED,
  PauseWatch,
  type PauseProbe,
  type PauseWatchPool,
  type SharedReadMember,
  SharedReadPool,
} from '../read';

/**
 * The connections the partition loops of one handler use (docs/partitions.md "Connections"):
 * none of their own per partition. With shared reads (the default) they are the app's, shared
 * with its plain loops; with `sharedReads: false`, the handler's own ({@link OwnPartitionLinks}).
 */
export interface PartitionLinks {
  /** Every command of the partition loops but their blocking reads; no loop closes it. */
  readonly commands: StreamsClient;
  /**
   * The blocking read of the loop on partition stream `stream`: one XREADGROUP names every
   * partition of the group (per hash slot on a Cluster). The loop leaves it when it stops.
   */
  reader(stream: string): SharedReadMember;
  /** The group's pause flag on the partitioned stream's name, one read for every loop. */
  readonly pauses: PauseProbe;
  /** Closes what is the handler's alone (nothing when the links are the app's). */
  close(): Promise<void>;
}

/** The app's shared loop connections, as the orchestrator holds them (`sharedReads: true`). */
export interface AppLoopLinks {
  readonly commands: StreamsClient;
  readonly reads: SharedReadPool;
  readonly pauses: PauseWatchPool | undefined;
}

/** The links of a partitioned handler on `stream`/`group` over the app's shared connections. */
export function appPartitionLinks(
  app: AppLoopLinks,
  group: string,
  stream: string,
): PartitionLinks {
  return {
    commands: app.commands,
    reader: (partitionStream) => app.reads.reader(group, partitionStream),
    pauses: app.pauses?.probe(group, stream) ?? NEVER_PAUSED,
    close: () => Promise.resolve(),
  };
}

/** What a handler's own links need (`sharedReads: false`). */
export interface OwnPartitionLinksConfig {
  /** The partitioned stream's name (its pause flag). */
  readonly stream: string;
  readonly group: string;
  /** The consumer name the loops read as. */
  readonly consumer: string;
  /** Opens the handler's commands connection (once, at construction). */
  openCommandsClient(): StreamsClient;
  /** Opens the connection of one read (one per hash slot its partitions are in). */
  openReadClient(): StreamsClient;
  /** The read a partition stream joins: `''` on one node, its hash slot on a Cluster. */
  partitionOf(stream: string): string;
  /** Told once when the pause flag cannot be read (an ACL). */
  warn(text: string): void;
  /** Clock, for tests. @default Date.now */
  readonly now?: () => number;
}

/**
 * A partitioned handler's own links (`sharedReads: false`): one commands connection and one read
 * naming its partitions (per hash slot on a Cluster), 2 connections per handler on one node
 * whatever its partition count; closed when the handler stops.
 */
export class OwnPartitionLinks implements PartitionLinks {
  readonly commands: StreamsClient;
  readonly pauses: PauseProbe;
  private readonly reads: SharedReadPool;

  constructor(private readonly config: OwnPartitionLinksConfig) {
    this.commands = config.openCommandsClient();
    this.reads = new SharedReadPool({
      openReadClient: () => config.openReadClient(),
      partitionOf: (stream) => config.partitionOf(stream),
      consumer: config.consumer,
    });
    this.pauses = this.commands.pauses
      ? new PauseWatch(this.commands.pauses, config.group, config.now, config.warn).member(
          config.stream,
        )
      : NEVER_PAUSED;
  }

  reader(stream: string): SharedReadMember {
    return this.reads.reader(this.config.group, stream);
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.reads.close(), this.commands.close()]);
  }
}
