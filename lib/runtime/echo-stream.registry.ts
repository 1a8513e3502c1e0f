import { Injectable } from '@nestjs/common';
import type { StreamConsumer } from '../consumer/stream-consumer';

/** The running consumer loops of the app; `ConsumerStats` reads them (internal). */
@Injectable()
export class ConsumerRegistry {
  private readonly consumers: StreamConsumer[] = [];

  add(consumer: StreamConsumer): void {
    this.consumers.push(consumer);
  }

  list(): readonly StreamConsumer[] {
    return this.consumers;
  }

  find(stream: string, group: string): StreamConsumer | undefined {
    return this.consumers.find((c) => c.stream === stream && c.group === group);
  }

  /** Forgets the given loops (those a stop took down; a loop started meanwhile stays). */
  remove(stopped: readonly StreamConsumer[]): void {
    const gone = new Set(stopped);
    const kept = this.consumers.filter((c) => !gone.has(c));
    this.consumers.splice(0, this.consumers.length, ...kept);
  }

  clear(): void {
    this.consumers.length = 0;
  }
}
