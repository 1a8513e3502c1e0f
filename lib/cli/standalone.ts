import { EchoStreamAdmin } from '../admin/echo-stream-admin.service';
import type { EchoStreamConnections } from '../runtime/echo-stream.connections';
import type { EchoStreamOrchestrator } from '../runtime/echo-stream.orchestrator';
import { ConsumerRegistry } from '../runtime/echo-stream.registry';
import { ConsumerStats } from '../stats/consumer-stats.service';

/** The library's own services over one client, without a Nest app and without loops. */
export interface StandaloneServices {
  admin: EchoStreamAdmin;
  stats: ConsumerStats;
}

/**
 * `EchoStreamAdmin` and `ConsumerStats` for the CLI, so it inspects, lists and redrives exactly as
 * an app does (copy before delete included). With no loops registered, a stream's dead letters
 * are in `<stream>:dlq` (a partitioned stream's too, under its own name). NOTE: both services
 * read only `connections.client`; the orchestrator is only used by `start()` / `stop()`, which
 * the CLI never calls.
 */
export function standaloneServices(client: EchoStreamConnections['client']): StandaloneServices {
  const connections = { client } as Pick<EchoStreamConnections, 'client'> as EchoStreamConnections;
  const noLoops = new ConsumerRegistry();
  const noOrchestrator = {
    start: () => {
      throw new Error('the CLI runs no loops');
    },
    stop: () => Promise.resolve(),
  } as Pick<EchoStreamOrchestrator, 'start' | 'stop'> as EchoStreamOrchestrator;
  return {
    admin: new EchoStreamAdmin(connections, noLoops, noOrchestrator),
    stats: new ConsumerStats(noLoops, connections),
  };
}
