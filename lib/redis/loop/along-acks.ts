import type { CommandLink } from '../connection';
import { checkpointKeyOf } from '../package-keys';
import type { AlongAck } from './ack-roles';

/**
 * `acked` (an XACK, the script of one, or an exactly-once commit) with `along` sent right behind
 * it on the same connection: one round trip for all of them; `acked`'s reply. Best effort: a
 * refused or failed write (an ACL without HDEL on the checkpoint keys) leaves a record no
 * delivery reads again (its entry is acked), and must not fail the ack itself.
 */
export async function withAlong(
  link: CommandLink,
  stream: string,
  group: string,
  acked: Promise<unknown>,
  along: readonly AlongAck[],
): Promise<unknown> {
  if (along.length === 0) return acked;
  const writes = along.map((write) =>
    link.send(alongAckCommand(stream, group, write)).catch(() => undefined),
  );
  const [reply] = await Promise.all([acked, ...writes]);
  return reply;
}

/** The command of a write sent along an XACK. */
function alongAckCommand(stream: string, group: string, write: AlongAck): string[] {
  switch (write.kind) {
    case 'dropCheckpoints':
      return ['HDEL', checkpointKeyOf(stream, group), ...write.entryIds];
  }
}
