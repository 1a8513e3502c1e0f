import { Injectable } from '@nestjs/common';
import type { PartitionedConsumer } from '../consumer/partitioned-consumer';
import type { StreamConsumer } from '../consumer/stream-consumer';

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
