/**
 * Connections: the factory (single node or Cluster), slot routing, the command link with its
 * deadlines and watchdog, the monitor and outage reports, the slot-map watch and reply shapes.
 */
export * from './cluster-routing';
export * from './command-link';
export * from './connection-failure';
export * from './connection-monitor';
export * from './outage-reporter';
export * from './redis-connection.factory';
export * from './reply-shapes';
export * from './server-features';
export * from './topology-watch';
