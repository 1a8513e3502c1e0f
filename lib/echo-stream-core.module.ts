import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { EchoStreamAdmin } from './admin/echo-stream-admin.service';
import { EchoStreamConnections } from './echo-stream.connections';
import { EchoStreamExplorer } from './echo-stream.explorer';
import { EchoStreamMetadataAccessor } from './echo-stream-metadata.accessor';
import { EchoStreamOrchestrator } from './echo-stream.orchestrator';
import { ConsumerRegistry } from './echo-stream.registry';
import { StreamProducer } from './producer/stream-producer.service';
import { ConsumerStats } from './stats/consumer-stats.service';
import { EchoStreamHealthIndicator } from './stats/echo-stream-health.indicator';

/**
 * The static half of the module: discovery and the loops live here, so importing
 * `EchoStreamModule.forRoot()` twice still registers each handler once (internal).
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    EchoStreamMetadataAccessor,
    EchoStreamExplorer,
    EchoStreamOrchestrator,
    ConsumerRegistry,
    EchoStreamConnections,
    StreamProducer,
    ConsumerStats,
    EchoStreamAdmin,
    EchoStreamHealthIndicator,
  ],
  exports: [
    StreamProducer,
    ConsumerStats,
    EchoStreamAdmin,
    EchoStreamHealthIndicator,
    // for EchoStreamDashboardModule (not exported from the package)
    EchoStreamConnections,
  ],
})
export class EchoStreamCoreModule {}
