/**
 * The members of a prom-client `Registry` the module uses: prom-client's default `register` or
 * any `new Registry()` fits. Declared here so the package's typings do not need prom-client.
 */
export interface EchoStreamMetricsRegistry {
  /** prom-client's `registerMetric` (`never`: any prom-client copy's metric type fits). */
  registerMetric(metric: never): void;
  getSingleMetric(name: string): unknown;
  removeSingleMetric(name: string): void;
}

/** The `metrics` module option: publish the module's metrics in the app's prom-client registry. */
export interface EchoStreamMetricsOptions {
  /**
   * The prom-client registry (`import { register } from 'prom-client'`, or a `Registry` of the
   * app's) that gets the module's metrics as collectors at bootstrap, read at scrape time and
   * removed at shutdown. Same names, types, help texts and labels as `ConsumerStats.prometheus()`.
   * Needs the optional peer `prom-client` (^15).
   * @see docs/observability.md "Metrics with prom-client / @willsoto/nestjs-prometheus"
   */
  registry: EchoStreamMetricsRegistry;
}
