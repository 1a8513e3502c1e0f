// The transport at the package root (`import { EchoStreamServer } from 'nestjs-echo-stream'`) without
// loading `@nestjs/microservices` with the root: an app without that optional peer must load the
// package. The classes that extend Nest's are getters that load `./index` on first use; the parts
// that need nothing of the peer (records, errors, field names) are plain re-exports. Each getter
// is written out as `Object.defineProperty(exports, name, { get() { return lazy.name } })`, the form
// Node's CommonJS lexer reads, so an ES module's `import { EchoStreamServer }` links too.
import type * as Transport from './index';

export { EchoStreamRecord, EchoStreamRecordBuilder } from './echo-stream.record-builder';
export type { EchoStreamStatus, EchoStreamConnectionEvents } from './link-status';
export type { EchoStreamContextArgs } from './echo-stream.context';
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

type Loaded = typeof Transport;
let loaded: Loaded | undefined;

/** `./index`, loaded on first use; without the peer, an error that names it. */
function load(): Loaded {
  if (loaded) return loaded;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    loaded = require('./index') as Loaded;
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND';
    if (!missing || !String((err as Error).message).includes('@nestjs/microservices')) throw err;
    throw new Error(
      "nestjs-echo-stream's microservices transport needs the optional peer " +
        '@nestjs/microservices (npm install @nestjs/microservices)',
      { cause: err },
    );
  }
  return loaded;
}

const lazy = {
  get EchoStreamServer() {
    return load().EchoStreamServer;
  },
  get EchoStreamClient() {
    return load().EchoStreamClient;
  },
  get EchoStreamContext() {
    return load().EchoStreamContext;
  },
  get EchoStreamExceptionFilter() {
    return load().EchoStreamExceptionFilter;
  },
};

/** The transport strategy (`nestjs-echo-stream/microservices`); loads the peer on first use. */
export declare const EchoStreamServer: Loaded['EchoStreamServer'];
/** The transport strategy. */
export type EchoStreamServer = Transport.EchoStreamServer;
/** The transport's `ClientProxy`; loads the peer on first use. */
export declare const EchoStreamClient: Loaded['EchoStreamClient'];
/** The transport's `ClientProxy`. */
export type EchoStreamClient = Transport.EchoStreamClient;
/** `@Ctx()` of a transport handler; loads the peer on first use. */
export declare const EchoStreamContext: Loaded['EchoStreamContext'];
/** `@Ctx()` of a transport handler. */
export type EchoStreamContext = Transport.EchoStreamContext;
/** The transport's pass-through exception filter; loads the peer on first use. */
export declare const EchoStreamExceptionFilter: Loaded['EchoStreamExceptionFilter'];
/** The transport's pass-through exception filter. */
export type EchoStreamExceptionFilter = Transport.EchoStreamExceptionFilter;

// The build is CommonJS. Where this file runs as an ES module (jest compiles lib/ so), `exports`
// does not exist and the getters cannot be made: there the transport is the subpath's alone.
if (typeof exports === 'object') {
  Object.defineProperty(exports, 'EchoStreamServer', {
    enumerable: true,
    get: function () {
      return lazy.EchoStreamServer;
    },
  });
  Object.defineProperty(exports, 'EchoStreamClient', {
    enumerable: true,
    get: function () {
      return lazy.EchoStreamClient;
    },
  });
  Object.defineProperty(exports, 'EchoStreamContext', {
    enumerable: true,
    get: function () {
      return lazy.EchoStreamContext;
    },
  });
  Object.defineProperty(exports, 'EchoStreamExceptionFilter', {
    enumerable: true,
    get: function () {
      return lazy.EchoStreamExceptionFilter;
    },
  });
}
