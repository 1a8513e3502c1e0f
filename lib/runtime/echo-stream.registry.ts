import { Injectable } from '@nestjs/common';
import { deadLetterStreamOf } from '../codec/dead-letter-fields';
import type { PartitionedConsumer, StreamConsumer } from '../consumer';

/** A running handler: one loop on a plain stream, or the partitions a process owns of a partitioned one. */
export type ConsumerLoop = StreamConsumer | PartitionedConsumer;

/** The running consumer loops of the app; `ConsumerStats` reads them (internal). */
@Injectable()
export class ConsumerRegistry {
  private readonly consumers: ConsumerLoop[] = [];

  add(consumer: ConsumerLoop): void {
    this.consumers.push(consumer);
  }

  list(): readonly ConsumerLoop[] {
    return this.consumers;
  }

  find(stream: string, group: string): ConsumerLoop | undefined {
    return this.consumers.find((c) => c.stream === stream && c.group === group);
  }

  /**
   * Where the dead letters of `stream` (and `group`) are: the dead-letter streams this app's loops
   * of it copy to, else (no loop, or every one with `deadLetterStream: false`) `<stream>:dlq`.
   */
  deadLetterStreamsOf(stream: string, group?: string): string[] {
    const sinks = new Set<string>();
    for (const loop of this.consumers) {
      if (loop.stream !== stream || (group !== undefined && loop.group !== group)) continue;
      if (loop.deadLetterStream !== false) sinks.add(loop.deadLetterStream);
    }
    return sinks.size > 0 ? [...sinks] : [deadLetterStreamOf(stream)];
  }

  /** Forgets the given loops (those a stop took down; a loop started meanwhile stays). */
  remove(stopped: readonly ConsumerLoop[]): void {
    const gone = new Set(stopped);
    const kept = this.consumers.filter((c) => !gone.has(c));
    this.consumers.splice(0, this.consumers.length, ...kept);
  }

  clear(): void {
    this.consumers.length = 0;
  }
}
