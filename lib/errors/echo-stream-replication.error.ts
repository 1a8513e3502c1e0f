/** The fields of an {@link EchoStreamReplicationError}. */
export interface ReplicationErrorFields {
  /** The stream written to. */
  readonly stream: string;
  /** The branded ids of the entries of this call, in order. */
  readonly ids: readonly string[];
  /**
   * The Redis entry ids the master assigned, in order (one per branded id): the entries ARE in
   * the stream on the master; consumers will see them. Not "not published".
   */
  readonly entryIds: readonly string[];
  /** The `replicas` asked for. */
  readonly replicas: number;
  /** How many replicas acknowledged the write within `timeoutMs` (WAIT's answer; 0 when WAIT failed). */
  readonly acknowledged: number;
  /** The `replicaTimeoutMs` in force. */
  readonly timeoutMs: number;
}

/**
 * `StreamProducer.publish()` / `publishMany()` with `{ replicas }`: the entries were written on the
 * master, but fewer than `replicas` replicas acknowledged them within `replicaTimeoutMs` (`WAIT`),
 * or WAIT itself failed (its reply error is the `cause`). The entries stay in the stream and will
 * be consumed; what is not known is whether they survive a failover of that master. Do not
 * publish them again as new messages; re-publishing under the same `{ id }` is safe (consumers
 * dedup on it) when a second write is wanted for the replicas' sake.
 * @see docs/scale.md "Durable publish"
 */
export class EchoStreamReplicationError extends Error implements ReplicationErrorFields {
  readonly stream: string;
  readonly ids: readonly string[];
  readonly entryIds: readonly string[];
  readonly replicas: number;
  readonly acknowledged: number;
  readonly timeoutMs: number;

  constructor(message: string, fields: ReplicationErrorFields, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'EchoStreamReplicationError';
    this.stream = fields.stream;
    this.ids = fields.ids;
    this.entryIds = fields.entryIds;
    this.replicas = fields.replicas;
    this.acknowledged = fields.acknowledged;
    this.timeoutMs = fields.timeoutMs;
  }
}
