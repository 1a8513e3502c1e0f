import type { CommandLink } from '../connection';
import { checkpointKeyOf } from '../package-keys';
import type { AlongAck } from './ack-roles';
import { DELETE_ACKED_BY_ALL_SCRIPT, DELETE_ACKED_BY_ALL_SHA } from './entry-deletions';

/**
 * `acked` (an XACK, the script of one, or an exactly-once commit) with `along` sent right behind
 * it on the same connection: one round trip for all of them; `acked`'s reply. Best effort: a
 * refused or failed write (an ACL without HDEL on the checkpoint keys) leaves a record no
 * delivery reads again (its entry is acked), and must not fail the ack itself; an entry left
 * undeleted is removed by a later sweep (`deleteOnAck: 'acked-by-all'`) or a trim.
 * @param xdelex true when the server has XDELEX (the XACKDEL family): an `ackedByAll` deletion is
 *   its ACKED form, else a script that does the same check.
 */
export async function withAlong(
  link: CommandLink,
  stream: string,
  group: string,
  acked: Promise<unknown>,
  along: readonly AlongAck[],
  xdelex = false,
): Promise<unknown> {
  if (along.length === 0) return acked;
  const writes = along.map((write) =>
    sendAlong(link, stream, group, write, xdelex).catch(() => undefined),
  );
  const [reply] = await Promise.all([acked, ...writes]);
  return reply;
}

/** True for the along write of `deleteOnAck`. */
export function isDeletion(write: AlongAck): write is Extract<AlongAck, { kind: 'deleteEntries' }> {
  return write.kind === 'deleteEntries';
}

/** Sends a write along an XACK. */
function sendAlong(
  link: CommandLink,
  stream: string,
  group: string,
  write: AlongAck,
  xdelex: boolean,
): Promise<unknown> {
  switch (write.kind) {
    case 'dropCheckpoints':
      return link.send(['HDEL', checkpointKeyOf(stream, group), ...write.entryIds]);
    case 'deleteEntries':
      if (!write.ackedByAll) return link.send(['XDEL', stream, ...write.entryIds]);
      if (xdelex)
        return link.send([
          'XDELEX',
          stream,
          'ACKED',
          'IDS',
          write.entryIds.length,
          ...write.entryIds,
        ]);
      return link.sendScript(DELETE_ACKED_BY_ALL_SCRIPT, DELETE_ACKED_BY_ALL_SHA, [
        1,
        stream,
        ...write.entryIds,
      ]);
  }
}
