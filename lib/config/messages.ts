import type { ServerFeatureReport } from '../interfaces/redis-server.interface';

/** Message texts of the package, from one place. */
export const messages = {
  badStreamArgument: (decorator: string, what: string, value: unknown) =>
    `@${decorator}(): ${what} must be a non-empty string, got ${describe(value)}`,
  badOption: (where: string, option: string, expected: string, value: unknown) =>
    `${where}: option '${option}' must be ${expected}, got ${describe(value)}`,
  /** As `badOption`, for a URL: `shown` is redacted or `<invalid URL> (reason)`, never the URL. */
  badUrl: (where: string, option: string, expected: string, shown: string) =>
    `${where}: option '${option}' must be ${expected}, got ${shown}`,
  unknownOption: (where: string, option: string, known: readonly string[]) =>
    `${where}: unknown option '${option}' (known: ${known.join(', ')})`,
  missingPeer: (option: string, peer: string, range: string) =>
    `EchoStreamModule: option '${option}' needs the optional peer dependency '${peer}' (${range}), ` +
    `which is not installed: npm install ${peer} (or remove the option)`,
  metricTaken: (name: string) =>
    `EchoStreamModule: option 'metrics': the registry already has a metric named '${name}'. ` +
    `Another app registered in this registry is still running (close it first), or the app ` +
    `defines a metric of that name itself`,
  duplicateHandler: (stream: string, group: string, first: string, second: string) =>
    `Two @StreamHandler methods consume ${stream}/${group}: ${first} and ${second}. ` +
    `Both would be the same consumer of the group and split its entries at random; ` +
    `use one handler per stream and group (or another group)`,
  requestScoped: (handler: string) =>
    `${handler} is on a request-scoped provider, or one that uses a request-scoped provider, ` +
    `guard, interceptor, pipe or filter: a consumer loop needs one long-lived instance and a ` +
    `stream entry is no HTTP request, so this handler is skipped (request-scoped providers and ` +
    `enhancers are not supported on @StreamHandler)`,
  requestScopedGlobalEnhancer: (enhancer: string) =>
    `${enhancer} is request-scoped (or depends on a request-scoped provider): Nest builds it per ` +
    `HTTP request and a stream entry is no request, so it does NOT run for @StreamHandler methods ` +
    `(request-scoped enhancers are not supported there; make it a singleton to apply it)`,
  evictionPolicy: (policy: string) =>
    `Redis maxmemory-policy is '${policy}': under memory pressure Redis may evict streams and ` +
    `consumer groups (entries lost). Use 'noeviction' for streams you cannot lose`,
  /** The one line at start naming the newer server's verbs in use (`ServerFeatureReport`). */
  serverFeatures: (report: ServerFeatureReport) => {
    if (report.mode === 'baseline')
      return `Server features: none used (serverFeatures: 'baseline')`;
    if (report.error !== undefined)
      return `Server features: none used (the server could not be asked: ${report.error})`;
    const others = report.available.filter((f) => !report.used.includes(f));
    const parts = [
      `${report.used.length > 0 ? report.used.join(', ') : 'none'} in use`,
      ...(others.length > 0 ? [`${others.join(', ')} answered, not used by this version`] : []),
    ];
    return `Server features: ${parts.join('; ')}`;
  },
};

function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object';
  return `${typeof value} ${String(value)}`;
}
