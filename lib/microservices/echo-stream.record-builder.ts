import type { PublishOptions } from '../interfaces/publish.interface';

/**
 * A payload with the options `EchoStreamClient.emit()` publishes it with: its branded `id` (the
 * consumers' dedup key), its partition `key`, and any other `StreamProducer.publish()` option.
 * Built by {@link EchoStreamRecordBuilder}.
 */
export class EchoStreamRecord<TData = unknown> {
  constructor(
    readonly data: TData,
    readonly options: Readonly<PublishOptions> = {},
  ) {}
}

/**
 * Builds an {@link EchoStreamRecord}, as Nest's record builders do for its other transports.
 *
 * @example
 * ```ts
 * const record = new EchoStreamRecordBuilder(order).setId(order.ref).setKey(order.customerId).build();
 * await lastValueFrom(this.orders.emit('orders.created', record));
 * ```
 */
export class EchoStreamRecordBuilder<TData = unknown> {
  private options: PublishOptions = {};

  constructor(private data?: TData) {}

  setData(data: TData): this {
    this.data = data;
    return this;
  }

  /** The branded id: a publish again under the same id is a duplicate to `dedup` handlers. */
  setId(id: string): this {
    this.options = { ...this.options, id };
    return this;
  }

  /** The partition key of a partitioned stream (docs/partitions.md); events only. */
  setKey(key: string): this {
    this.options = { ...this.options, key };
    return this;
  }

  /** Any other `StreamProducer.publish()` option (`maxLen`, `idempotent`, `replicas`, ...). */
  setOptions(options: PublishOptions): this {
    this.options = { ...this.options, ...options };
    return this;
  }

  build(): EchoStreamRecord<TData> {
    return new EchoStreamRecord(this.data as TData, this.options);
  }
}
