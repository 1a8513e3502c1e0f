/** Settings of the sample app, read once from the environment (tests build one directly). */
export class SampleConfig {
  /** Where the streams live. `REDIS_URL`. @default 'redis://127.0.0.1:6379' */
  readonly redisUrl: string;
  /** Chance (0..1) that the billing handler fails an order, to show retries. `FAILURE_RATE`. @default 0.1 */
  readonly failureRate: number;
  /** HTTP port. `PORT`. @default 3000 */
  readonly port: number;
  /** HTTP bind address. `HOST`. @default '127.0.0.1' */
  readonly host: string;
  /** Consumer name in every group. `CONSUMER_NAME`. @default the module's `${hostname}-${pid}` */
  readonly consumerName: string | undefined;
  /** JSON-lines file the orders archive appends trimmed entries to. `ARCHIVE_FILE`. @default 'orders-archive.jsonl' */
  readonly archiveFile: string;
  /**
   * The token the dashboard's guard asks for (`Authorization: Bearer <token>` or the cookie
   * `echo_dashboard_token`); set, it makes the dashboard read-write. `ECHO_DASHBOARD_TOKEN`.
   * @default undefined (the dashboard is read-only, with no guard)
   */
  readonly dashboardToken: string | undefined;

  constructor(values: Partial<SampleConfig> = {}) {
    this.redisUrl = values.redisUrl ?? 'redis://127.0.0.1:6379';
    this.failureRate = values.failureRate ?? 0.1;
    this.port = values.port ?? 3000;
    this.host = values.host ?? '127.0.0.1';
    this.consumerName = values.consumerName;
    this.archiveFile = values.archiveFile ?? 'orders-archive.jsonl';
    this.dashboardToken = values.dashboardToken;
    if (!(this.failureRate >= 0 && this.failureRate <= 1)) {
      throw new RangeError(`FAILURE_RATE must be a number from 0 to 1, got ${values.failureRate}`);
    }
    if (!Number.isInteger(this.port) || this.port < 0 || this.port > 65535) {
      throw new RangeError(`PORT must be an integer from 0 to 65535, got ${values.port}`);
    }
  }

  /**
   * Reads `REDIS_URL`, `FAILURE_RATE`, `PORT`, `HOST`, `CONSUMER_NAME`, `ARCHIVE_FILE`,
   * `ECHO_DASHBOARD_TOKEN`.
   */
  static fromEnv(env: NodeJS.ProcessEnv = process.env): SampleConfig {
    const number = (name: string): number | undefined => {
      const raw = env[name];
      if (raw === undefined || raw === '') return undefined;
      const value = Number(raw);
      if (Number.isNaN(value)) throw new RangeError(`${name} must be a number, got '${raw}'`);
      return value;
    };
    return new SampleConfig({
      redisUrl: env.REDIS_URL || undefined,
      failureRate: number('FAILURE_RATE'),
      port: number('PORT'),
      host: env.HOST || undefined,
      consumerName: env.CONSUMER_NAME || undefined,
      archiveFile: env.ARCHIVE_FILE || undefined,
      dashboardToken: env.ECHO_DASHBOARD_TOKEN || undefined,
    });
  }
}
