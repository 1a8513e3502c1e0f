import { CommandLink } from '../../lib/redis/connection/command-link';
import {
  createConnection,
  type ConnectionTarget,
} from '../../lib/redis/connection/redis-connection.factory';
import { waitFor } from './wait-for';

/**
 * A `CommandLink` on a loop's connection to `target` (a server's url, or a Cluster's nodes), as
 * the module opens one, once the connection is ready; `close()` it when done.
 */
export async function openCommandLink(
  target: ConnectionTarget,
  deadlineMs?: number,
): Promise<CommandLink> {
  const connection = createConnection(target, 'loop', () => undefined);
  const link = new CommandLink(connection, deadlineMs);
  await waitFor(() => connection.status === 'ready', { message: 'command link ready' });
  return link;
}
