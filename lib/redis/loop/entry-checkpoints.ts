import type { CommandLink } from '../connection';
import { checkpointKeyOf } from '../package-keys';
import type { EntryCheckpoints } from '../stream-roles';

/**
 * Checkpoints of the entries a group works on (docs/delivery.md "Checkpoints"): one hash per
 * stream and group, in the stream's hash slot, field = entry id, value = the JSON saved. A field
 * goes away with its entry's XACK or dead letter (`LoopCommands.ack` with `drop`).
 */
export class RedisEntryCheckpoints implements EntryCheckpoints {
  constructor(private readonly link: CommandLink) {}

  async save(stream: string, group: string, entryId: string, json: string): Promise<void> {
    await this.link.send(['HSET', checkpointKeyOf(stream, group), entryId, json]);
  }

  async read(
    stream: string,
    group: string,
    entryIds: readonly string[],
  ): Promise<(string | null)[]> {
    if (entryIds.length === 0) return [];
    return (await this.link.send(['HMGET', checkpointKeyOf(stream, group), ...entryIds])) as (
      string | null
    )[];
  }
}
