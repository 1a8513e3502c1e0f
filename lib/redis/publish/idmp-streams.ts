import { crc32 } from '../../codec/partition-key';
import { errorText } from '../../codec/codecs';
import type { CommandLink, ServerFeatures } from '../connection';
import { IDMP_SETUP_SCRIPT, IDMP_SETUP_SHA } from './idmp-setup.script';

/** XCFGSET's ceiling of IDMP-DURATION, in seconds. */
export const IDMP_MAX_DURATION_S = 86_400;
/** XCFGSET's ceiling of IDMP-MAXSIZE: the ids IDMP keeps per producer id. */
export const IDMP_MAX_SIZE = 10_000;
/**
 * The producer ids a stream's branded ids are spread over (`crc32(id) mod 1024`): IDMP keeps at
 * most {@link IDMP_MAX_SIZE} ids per producer id, so a stream holds its promise up to about nine
 * million distinct ids per window (a bucket's share stays under its ceiling with a wide margin).
 * The producer id comes from the branded id, never from the process, so a repeat from another
 * process, or after a restart, meets the first write.
 */
export const IDMP_PRODUCER_IDS = 1024;

/** How long a stream found ready is trusted before it is looked at again (a DEL resets it). */
const RECHECK_MS = 60_000;

/** The IDMP producer id of the branded id `id`. */
export function idmpProducerOf(id: string): string {
  return `echo-stream:${crc32(id) % IDMP_PRODUCER_IDS}`;
}

/**
 * Which streams take idempotent writes through the server's IDMP (Redis 8.6) rather than the
 * script (docs/publishing.md "Idempotent publish"): the server answers IDMP, the window fits
 * XCFGSET's ceiling, and the stream is configured to hold an id at least that long
 * ({@link IDMP_SETUP_SCRIPT}, once per stream and minute on this connection). A server that
 * refuses the setup (an ACL without XCFGSET) keeps that stream on the script, said once per
 * connection through `warn`.
 */
export class IdmpStreams {
  private readonly ready = new Map<string, { at: number; answer: Promise<boolean> }>();
  private readonly refused = new Set<string>();
  private warned = false;

  constructor(
    private readonly link: CommandLink,
    private readonly features: ServerFeatures,
    private readonly warn: (message: string) => void = () => undefined,
  ) {}

  /** Whether idempotent writes of `stream` with a window of `windowMs` go through IDMP. */
  async takes(stream: string, windowMs: number): Promise<boolean> {
    const duration = Math.ceil(windowMs / 1000);
    if (duration > IDMP_MAX_DURATION_S || this.refused.has(stream)) return false;
    // awaited, not `uses()`: a process's first writes must not take the script while the probe
    // is out, since the two paths do not see each other's ids
    if (!(await this.features.settled('IDMP'))) return false;
    const key = `${duration}\u0000${stream}`;
    const known = this.ready.get(key);
    if (known && Date.now() - known.at < RECHECK_MS) return known.answer;
    const answer = this.setUp(stream, duration);
    this.ready.set(key, { at: Date.now(), answer });
    answer.catch(() => this.ready.delete(key));
    return answer;
  }

  /** Forgets what is known of `stream` (a write found it gone): the next write sets it up. */
  forget(stream: string): void {
    for (const key of this.ready.keys())
      if (key.endsWith(`\u0000${stream}`)) this.ready.delete(key);
  }

  private async setUp(stream: string, duration: number): Promise<boolean> {
    try {
      await this.link.sendScript(IDMP_SETUP_SCRIPT, IDMP_SETUP_SHA, [
        1,
        stream,
        duration,
        IDMP_MAX_SIZE,
      ]);
      return true;
    } catch (err) {
      if (!/NOPERM|no permissions|unknown command|not allowed/i.test(errorText(err))) throw err;
      this.refused.add(stream);
      if (this.warned) return false;
      this.warned = true;
      this.warn(
        `Idempotent publish to ${stream} uses the script, not the server's IDMP: setting its ` +
          `IDMP window was refused (${errorText(err)}); grant +xcfgset (and +xinfo|stream) ` +
          `to use it; other streams refused later are not named again (docs/publishing.md ` +
          `"Idempotent publish")`,
      );
      return false;
    }
  }
}
