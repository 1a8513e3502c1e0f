import { errorText } from '../../codec/codecs';
import type {
  ServerFeature,
  ServerFeatureMode,
  ServerFeatureReport,
} from '../../interfaces/redis-server.interface';
import type { CommandLink } from './command-link';
import { isCluster } from './cluster-routing';

/** Every feature the probe looks for, in the order they are named. */
export const SERVER_FEATURES: readonly ServerFeature[] = ['CLAIM', 'IDMP', 'XACKDEL'];

/** The features this version uses where they apply (docs/compatibility.md "Server features"). */
export const USED_SERVER_FEATURES: readonly ServerFeature[] = ['CLAIM', 'IDMP', 'XACKDEL'];

/** What {@link probeServerFeatures} found. */
export interface ServerFeatureProbe {
  /** The features every node answers, in {@link SERVER_FEATURES} order. */
  readonly features: readonly ServerFeature[];
  /** Why the probe found none when it could not ask (COMMAND refused by an ACL, a lost link). */
  readonly error?: string;
}

/**
 * Asks the server which of {@link SERVER_FEATURES} it has: COMMAND DOCS of XREADGROUP and XADD
 * (their CLAIM and IDMP arguments) and COMMAND INFO of XACKDEL, in one round trip. On a Cluster
 * every master is asked and only what all of them have counts (a rolling upgrade of the nodes
 * keeps the older path until it is done). A probe that cannot ask finds nothing: the Redis 7 path
 * works everywhere.
 */
export async function probeServerFeatures(link: CommandLink): Promise<ServerFeatureProbe> {
  try {
    // the first call on a Cluster also waits for its slot map
    const found = [await featuresOf((args) => link.send(args))];
    const redis = link.connection;
    if (isCluster(redis)) {
      const masters = redis.nodes('master');
      found.push(
        ...(await Promise.all(
          masters.map((node) => featuresOf((args) => link.sendBeside(node, args))),
        )),
      );
    }
    return { features: SERVER_FEATURES.filter((f) => found.every((each) => each.has(f))) };
  } catch (err) {
    return { features: [], error: errorText(err) };
  }
}

/**
 * The features of one connection's server, asked once ({@link probeServerFeatures}); none under
 * `'baseline'`. A probe that could not ask is forgotten, so the next use asks again.
 */
export class ServerFeatures {
  private probe: Promise<ServerFeatureProbe> | undefined;
  private answer: ServerFeatureProbe | undefined;

  constructor(
    private readonly link: CommandLink,
    /** The module option `serverFeatures`. */
    readonly mode: ServerFeatureMode = 'auto',
  ) {}

  /** What the server answers (asked on first use). */
  found(): Promise<ServerFeatureProbe> {
    if (this.mode === 'baseline') return Promise.resolve({ features: [] });
    this.probe ??= probeServerFeatures(this.link).then((probe) => {
      if (probe.error !== undefined) this.probe = undefined;
      else this.answer = probe;
      return probe;
    });
    return this.probe;
  }

  /**
   * As {@link uses}, once the probe has answered: for a path that must not change while the
   * probe is out (an idempotent publish's two paths do not see each other's ids). A probe that
   * could not ask answers false.
   */
  async settled(feature: ServerFeature): Promise<boolean> {
    if (this.mode === 'baseline' || !USED_SERVER_FEATURES.includes(feature)) return false;
    return (await this.found()).features.includes(feature);
  }

  /** What the server answers and what of it the module uses (asked on first use). */
  async report(): Promise<ServerFeatureReport> {
    const { features, error } = await this.found();
    const used = features.filter((f) => USED_SERVER_FEATURES.includes(f));
    return {
      mode: this.mode,
      available: features,
      used,
      ...(error === undefined ? {} : { error }),
    };
  }

  /**
   * True when `feature` is one the module uses and the server is known to have it. Synchronous, so
   * a command that depends on it leaves in order with those sent after it: until the probe (started
   * by the first call) has answered, the Redis 7 path is taken, which every server runs.
   */
  uses(feature: ServerFeature): boolean {
    if (this.mode === 'baseline' || !USED_SERVER_FEATURES.includes(feature)) return false;
    if (this.answer === undefined) void this.found();
    return this.answer?.features.includes(feature) ?? false;
  }
}

/** The features one node answers, asked with `send`. */
async function featuresOf(
  send: (args: ReadonlyArray<string>) => Promise<unknown>,
): Promise<Set<ServerFeature>> {
  const [docs, info] = await Promise.all([
    send(['COMMAND', 'DOCS', 'XREADGROUP', 'XADD']),
    send(['COMMAND', 'INFO', 'XACKDEL']),
  ]);
  const words = flatWords(docs);
  const features = new Set<ServerFeature>();
  // an argument of a command's docs is a map holding `token` then its word
  for (let i = 0; i + 1 < words.length; i++) {
    if (words[i] !== 'token') continue;
    if (words[i + 1] === 'CLAIM') features.add('CLAIM');
    if (words[i + 1] === 'IDMP') features.add('IDMP');
  }
  // COMMAND INFO of an unknown command is one nil
  if (Array.isArray(info) && info.some((row) => Array.isArray(row) || isObject(row)))
    features.add('XACKDEL');
  return features;
}

/** Every string of a reply, depth first: arrays in order, a map's key before its value. */
function flatWords(reply: unknown, out: string[] = []): string[] {
  if (typeof reply === 'string') out.push(reply);
  else if (Buffer.isBuffer(reply)) out.push(reply.toString());
  else if (Array.isArray(reply)) for (const item of reply) flatWords(item, out);
  else if (reply instanceof Map)
    for (const [key, value] of reply) {
      flatWords(key, out);
      flatWords(value, out);
    }
  else if (isObject(reply))
    for (const [key, value] of Object.entries(reply)) {
      out.push(key);
      flatWords(value, out);
    }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
