import { Injectable } from '@nestjs/common';
import type { StreamConsumer } from './consumer/stream-consumer';

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

  clear(): void {
    this.consumers.length = 0;
  }
}
