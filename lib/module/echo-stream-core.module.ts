import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { EchoStreamAdmin } from '../admin/echo-stream-admin.service';
import { StreamArchiveExplorer } from '../discovery/echo-stream-archive.explorer';
import { EchoStreamConnections } from '../runtime/echo-stream.connections';
import { EchoStreamExplorer } from '../discovery/echo-stream.explorer';
import { EchoStreamMetadataAccessor } from '../discovery/echo-stream-metadata.accessor';
import { EchoStreamLifecycle } from '../runtime/echo-stream.lifecycle';
import { EchoStreamOrchestrator } from '../runtime/echo-stream.orchestrator';
import { ConsumerRegistry } from '../runtime/echo-stream.registry';
import { StreamProducer } from '../producer/stream-producer.service';
import { ConsumerStats } from '../stats/consumer-stats.service';
import { ECHO_STREAM_LIFECYCLE, ECHO_STREAM_LOOP_CONTROL } from '../config/constants';
import { EchoStreamHealthIndicator } from '../stats/echo-stream-health.indicator';
import { HandlerPipelineFactory } from '../handlers/handler-pipeline.factory';
import { PromClientCollectors } from '../stats/prom-client-collectors';

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
    HandlerPipelineFactory,
    StreamArchiveExplorer,
    EchoStreamLifecycle,
    PromClientCollectors,
    // the services that only start / stop the loops or read reports take them by these tokens
    { provide: ECHO_STREAM_LOOP_CONTROL, useExisting: EchoStreamOrchestrator },
    { provide: ECHO_STREAM_LIFECYCLE, useExisting: EchoStreamLifecycle },
  ],
  exports: [
    StreamProducer,
    ConsumerStats,
    EchoStreamAdmin,
    EchoStreamHealthIndicator,
    // for EchoStreamDashboardModule (not exported from the package)
    EchoStreamConnections,
    ConsumerRegistry,
  ],
})
export class EchoStreamCoreModule {}
