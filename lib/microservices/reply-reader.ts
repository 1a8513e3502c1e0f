import type { Logger } from '@nestjs/common';
import { errorText } from '../codec/codecs';
import type { StreamBrowsing } from '../redis/stream-roles';
import { parseReply, type ReplyBody } from './rpc-wire';

/** How long one XREAD of the reply stream parks (a close waits for it at most this long). */
const REPLY_READ_BLOCK_MS = 1000;
/** Replies taken per read. */
const REPLY_READ_COUNT = 100;
/** The wait after a failed read, doubling up to the cap. */
const BACKOFF_MS = { first: 100, max: 2000 } as const;

/**
 * Reads a client's reply stream with a blocking XREAD on its own connection and hands each reply
 * to the call waiting for its correlation id; a reply no call waits for (it came after its
 * timeout, or twice) is dropped (internal).
 */
export class ReplyReader {
  private readonly waiting = new Map<string, (body: ReplyBody) => void>();
  /** The stream is this client's alone: read from its start. */
  private lastId = '0-0';
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly stream: string,
    private readonly browser: Pick<StreamBrowsing, 'readAfter'>,
    private readonly logger: Logger,
  ) {}

  /** Waits for the reply to `correlationId`; the function returned stops waiting. */
  expect(correlationId: string, onReply: (body: ReplyBody) => void): () => void {
    this.waiting.set(correlationId, onReply);
    return () => void this.waiting.delete(correlationId);
  }

  /** How many calls wait for their reply. */
  get pending(): number {
    return this.waiting.size;
  }

  start(): void {
    this.running ??= this.run();
  }

  /**
   * Stops reading: settles once the read parked now ends (within its BLOCK, or at once when its
   * connection is dropped); the waiting calls stay (their timeouts run).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async run(): Promise<void> {
    let backoff: number = BACKOFF_MS.first;
    while (!this.stopped) {
      try {
        const entries = await this.browser.readAfter(
          this.stream,
          this.lastId,
          REPLY_READ_BLOCK_MS,
          REPLY_READ_COUNT,
        );
        backoff = BACKOFF_MS.first;
        for (const entry of entries) {
          this.lastId = entry.entryId;
          this.deliver(entry.fields);
        }
      } catch (err) {
        if (this.stopped) break;
        this.logger.warn(`Reading replies from ${this.stream} failed: ${errorText(err)}`);
        await new Promise((resolve) => setTimeout(resolve, backoff));
        backoff = Math.min(backoff * 2, BACKOFF_MS.max);
      }
    }
  }

  private deliver(fields: readonly string[] | null): void {
    const reply = fields && parseReply(fields);
    if (!reply) return;
    const onReply = this.waiting.get(reply.correlationId);
    if (!onReply) {
      this.logger.debug?.(`Dropped a reply no call waits for (correlation ${reply.correlationId})`);
      return;
    }
    this.waiting.delete(reply.correlationId);
    onReply(reply.body);
  }
}
