import type { EchoStreamAdmin } from '../admin/echo-stream-admin.service';
import type { StreamBrowsing, StreamsClient } from '../redis/stream-roles';
import type { ConsumerStats } from '../stats/consumer-stats.service';

/** Everything a command may use: the library's services over one connection, and the output. */
export interface CommandContext {
  client: StreamsClient;
  browser: StreamBrowsing;
  admin: EchoStreamAdmin;
  stats: ConsumerStats;
  json: boolean;
  out: (text: string) => void;
  /** Aborted on Ctrl-C: `tail --follow` stops. */
  signal: AbortSignal;
  /** Asks `question` on the terminal (` [y/N]` added); true only on `y` or `yes`. */
  confirm(question: string): Promise<boolean>;
}
