export { EchoStreamModule } from './module/echo-stream.module';
export { StreamHandler } from './decorators/stream-handler.decorator';
export { DeadLetter } from './decorators/dead-letter.decorator';
export { Payload } from './decorators/payload.decorator';
export { Ctx } from './decorators/ctx.decorator';
export type { StreamPipe } from './decorators/stream-param.decorator';
export { ECHO_STREAM_CONTEXT_TYPE } from './handlers/handler-pipeline.factory';
export { StreamArchive } from './decorators/stream-archive.decorator';
export { StreamProducer } from './producer/stream-producer.service';
export {
  brandedId,
  brandedIdTime,
  BrandedIdGenerator,
  type BrandedIdGeneratorOptions,
  derivedBrandedId,
  isBrandedId,
} from './codec/branded-id';
export { ConsumerStats } from './stats/consumer-stats.service';
export { EchoStreamHealthIndicator } from './stats/echo-stream-health.indicator';
export { EchoStreamAdmin } from './admin/echo-stream-admin.service';
export { EchoStreamConfigError } from './errors/echo-stream-config.error';
export { EchoStreamHealthError } from './errors/echo-stream-health.error';
export {
  EchoStreamConnectionError,
  type ConnectionErrorFields,
} from './errors/echo-stream-connection.error';
export type { RedisFailureReason } from './interfaces/redis-server.interface';
export {
  EchoStreamPublishError,
  type PublishErrorFields,
} from './errors/echo-stream-publish.error';
export {
  EchoStreamReplicationError,
  type ReplicationErrorFields,
} from './errors/echo-stream-replication.error';
export { NonRetryableError } from './errors/non-retryable.error';
export { PROMETHEUS_CONTENT_TYPE } from './stats/prometheus';
export { DecodeError, jsonCodec, fieldsCodec } from './codec/codecs';
export { crc32, partitionOf, partitionStreamOf, PARTITION_KEY_FIELD } from './codec/partition-key';
export * from './interfaces';
export * from './dashboard';
// the microservices transport, also at `nestjs-echo-stream/microservices`; its classes load the
// optional peer `@nestjs/microservices` on first use, never with the root
export * from './microservices/root-exports';
