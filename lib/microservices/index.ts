// `nestjs-echo-stream/microservices`: the Nest microservices transport. The only entry that loads
// `@nestjs/microservices` (an optional peer): the package root does not import it.
export { EchoStreamServer } from './echo-stream.server';
export type { EchoStreamStatus, EchoStreamConnectionEvents } from './link-status';
export { EchoStreamClient } from './echo-stream.client';
export { EchoStreamRecord, EchoStreamRecordBuilder } from './echo-stream.record-builder';
export { EchoStreamContext, type EchoStreamContextArgs } from './echo-stream.context';
export { EchoStreamExceptionFilter } from './echo-stream-exception.filter';
export type { EchoStreamServerOptions, EchoStreamClientOptions } from './microservice-options';
export {
  EchoStreamRpcError,
  type RpcErrorFields,
  type RpcErrorReason,
} from '../errors/echo-stream-rpc.error';
export {
  EchoStreamRpcTimeoutError,
  type RpcTimeoutErrorFields,
} from '../errors/echo-stream-rpc-timeout.error';
export { RPC_FIELDS } from './rpc-wire';
