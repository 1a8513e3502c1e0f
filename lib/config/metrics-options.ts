import { messages } from './messages';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import type {
  EchoStreamMetricsOptions,
  EchoStreamMetricsRegistry,
} from '../interfaces/metrics-options.interface';

const METRICS_OPTION_NAMES: ReadonlyArray<keyof EchoStreamMetricsOptions> = ['registry'];
const REGISTRY_METHODS: ReadonlyArray<keyof EchoStreamMetricsRegistry> = [
  'registerMetric',
  'getSingleMetric',
  'removeSingleMetric',
];

/**
 * Checks the `metrics` module option (a prom-client registry, by its methods: any copy of
 * prom-client ^15 fits); throws a clear error on a bad one. Does not load prom-client: that
 * happens at bootstrap, only when the option is set.
 */
export function checkMetricsOptions(
  where: string,
  metrics: EchoStreamMetricsOptions | undefined,
): EchoStreamMetricsOptions | undefined {
  if (metrics === undefined) return undefined;
  if (typeof metrics !== 'object' || metrics === null || Array.isArray(metrics)) {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'metrics', '{ registry } (a prom-client Registry)', metrics),
    );
  }
  for (const key of Object.keys(metrics)) {
    if (!(METRICS_OPTION_NAMES as readonly string[]).includes(key)) {
      throw new EchoStreamConfigError(
        messages.unknownOption(`${where} metrics`, key, METRICS_OPTION_NAMES),
      );
    }
  }
  const registry: unknown = metrics.registry;
  const isRegistry =
    typeof registry === 'object' &&
    registry !== null &&
    REGISTRY_METHODS.every(
      (method) => typeof (registry as Record<string, unknown>)[method] === 'function',
    );
  if (!isRegistry) {
    throw new EchoStreamConfigError(
      messages.badOption(
        where,
        'metrics.registry',
        "a prom-client Registry (e.g. `register` from 'prom-client')",
        registry,
      ),
    );
  }
  return metrics;
}
