import type {
  AlongAck,
  CommitVerdict,
  EntryCommit,
  SkipRecord,
  StreamsClient,
} from '../../redis/stream-roles';
import type { LoopContext } from '../context';

/** Something with writes to send in the round trip of some entries' XACK (checkpoints dropped). */
export interface AlongAckSource {
  /** The writes along the XACK of entries a handler completed (`null`: none). */
  alongAck(ids: readonly string[]): AlongAck | null;
  /**
   * The writes along the XACK of entries that leave without a handler's ack (a dead letter, an
   * entry deleted from the stream); absent: the same as {@link alongAck}.
   */
  alongExit?(ids: readonly string[]): AlongAck | null;
}

/**
 * The one place a loop's XACK is written, with everything that goes with it (docs/ARCHITECTURE.md
 * "Handle and settle"): the writes sent along in its round trip ({@link AlongAckSource}: the
 * entries' checkpoints dropped) and, for handled entries of `dedup` / `newerWins`, their skip
 * records in the same script call. The ack buffer, the settlement of deleted entries and the
 * dead-letter path all ack through it, so what rides with an XACK is decided here, once.
 */
export class AckWriter {
  constructor(
    private readonly context: Pick<LoopContext, 'stream' | 'group' | 'consumer'>,
    private readonly client: Pick<StreamsClient, 'ack' | 'ackRecording' | 'commits'>,
    private readonly along: readonly AlongAckSource[] = [],
  ) {}

  /**
   * XACK of entries a handler completed, with their along writes; with `records`, all in one
   * script call (the records written before the XACK).
   */
  async handled(ids: readonly string[], records: readonly SkipRecord[] = []): Promise<void> {
    const { stream, group } = this.context;
    const along = this.along.flatMap((each) => each.alongAck(ids) ?? []);
    if (records.length > 0 && this.client.ackRecording)
      await this.client.ackRecording(stream, group, ids, records, along);
    else await this.client.ack(stream, group, ids, along);
  }

  /**
   * The commits of `exactlyOnce` entries a handler completed (each one's writes, records and
   * XACK, fenced: docs/ARCHITECTURE.md "Exactly-once commits"), with their along writes; one
   * verdict per entry.
   * @throws Error when the client cannot commit (the loop refuses `exactlyOnce` without it).
   */
  async committed(commits: readonly EntryCommit[]): Promise<CommitVerdict[]> {
    const { stream, group, consumer } = this.context;
    if (!this.client.commits)
      throw new Error(`${stream}/${group}: this Redis client cannot commit exactly-once entries`);
    const ids = commits.map((c) => c.entryId);
    // a commit may be refused (fenced): its entry is then another consumer's to handle, so it
    // must stay in the stream; `deleteOnAck`'s sweep removes the committed ones (acked by all)
    const along = this.along.flatMap((each) => each.alongAck(ids) ?? []);
    const kept = along.filter((write) => write.kind !== 'deleteEntries');
    return this.client.commits.commit(stream, group, consumer, commits, kept);
  }

  /** XACK of entries that leave without a handler's ack (a dead letter, a deleted entry). */
  async exited(ids: readonly string[]): Promise<void> {
    const { stream, group } = this.context;
    const along = this.along.flatMap(
      (each) => (each.alongExit ? each.alongExit(ids) : each.alongAck(ids)) ?? [],
    );
    await this.client.ack(stream, group, ids, along);
  }
}
