/**
 * The completed entries of keyed lanes whose XACK reply is not in, with their keys, in the order
 * they joined the loop's AckBuffer (docs/partitions.md "Order"). The buffer sends its acks in that
 * order and a connection answers in order, so a reply names the oldest of them first: releasing
 * them is a walk from the front, with no map from entry id to key (a drain of partitions completes
 * every entry through here, and such a map's churn was the largest cost of the gate). Ids of the
 * reply that are not next in line (entries without a key, acks of a settle, or a reply out of
 * order) are looked up among the rest, so every id of a reply is released, whatever its order.
 */
export class AwaitingAcks {
  private ids: string[] = [];
  private keys: string[] = [];
  /** Where the entries still awaited begin in {@link ids} (released ones are dropped lazily). */
  private from = 0;

  /** Entries awaited. */
  get size(): number {
    return this.ids.length - this.from;
  }

  /** `entryId`, of `key`, joined the buffer. An id added twice is awaited twice. */
  push(entryId: string, key: string): void {
    this.ids.push(entryId);
    this.keys.push(key);
  }

  /** The server acknowledged `acked`: `release` is called with the key of each entry awaited. */
  release(acked: readonly string[], release: (key: string) => void): void {
    if (this.size === 0) return;
    const { ids, keys } = this;
    let at = this.from;
    let unmatched: string[] | null = null;
    for (const id of acked) {
      if (at < ids.length && ids[at] === id) release(keys[at++]);
      else (unmatched ??= []).push(id);
    }
    this.from = at;
    if (unmatched !== null && this.size > 0) this.releaseAnywhere(new Set(unmatched), release);
    this.compact();
  }

  /** The ids of a reply that were not next in line, wherever they wait. */
  private releaseAnywhere(acked: ReadonlySet<string>, release: (key: string) => void): void {
    const ids: string[] = [];
    const keys: string[] = [];
    for (let i = this.from; i < this.ids.length; i++) {
      if (acked.has(this.ids[i])) release(this.keys[i]);
      else {
        ids.push(this.ids[i]);
        keys.push(this.keys[i]);
      }
    }
    this.ids = ids;
    this.keys = keys;
    this.from = 0;
  }

  private compact(): void {
    if (this.from === this.ids.length) {
      this.ids = [];
      this.keys = [];
      this.from = 0;
    } else if (this.from > 1024 && this.from * 2 > this.ids.length) {
      this.ids = this.ids.slice(this.from);
      this.keys = this.keys.slice(this.from);
      this.from = 0;
    }
  }
}
