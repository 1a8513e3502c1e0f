/**
 * The idempotent write role (docs/publishing.md "Idempotent publish"), beside the roles of
 * `stream-roles.ts` (which re-exports it). A leaf: types only.
 */
import type { ReplicatedWrite } from '../stream-roles';

/** One entry of an idempotent write: its branded id (the dedup key) and its fields. */
export interface IdempotentItem {
  id: string;
  fields: readonly string[];
}

/** What an idempotent write answered for one item. */
export interface IdempotentAdd {
  /** The entry id: the one written now, or the first write's when the id was written before. */
  entryId: string;
}

/** XADDs that write an id once per window (`publish(..., { idempotent: true })`). */
export interface IdempotentWrites {
  /**
   * On Redis 8.6, one XADD ... IDMP, or for several items one call of the IDMP-add script (the
   * server keeps the ids; see `IdmpStreams`); elsewhere one script call (EVALSHA, EVAL on
   * NOSCRIPT) writing the items of `items` whose branded id
   * was not written to `stream` within `windowMs`, atomically on the server; one answer per
   * item, in order. The index keys share the stream's hash slot.
   */
  addIdempotent(
    stream: string,
    items: readonly IdempotentItem[],
    windowMs: number,
    maxLen?: number,
  ): Promise<IdempotentAdd[]>;
  /**
   * As `addIdempotent`, then `WAIT replicas timeoutMs` as the LAST command of the same pipeline
   * (as `DurableWrites.addReplicated`). A repeat writes no entry but rewrites its index key (same
   * value, same expiry), so its WAIT counts the replicas that have everything the master wrote
   * before it, the first write of that id included, whichever connection made it.
   */
  addIdempotentReplicated(
    stream: string,
    items: readonly IdempotentItem[],
    windowMs: number,
    maxLen: number | undefined,
    replicas: number,
    timeoutMs: number,
  ): Promise<ReplicatedWrite>;
}
