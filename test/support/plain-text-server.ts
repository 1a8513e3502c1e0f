/** A loopback TCP server that answers whatever it gets with a Redis error line, in plain text. */
import * as net from 'node:net';

/** A running {@link startPlainTextServer}. */
export interface PlainTextServer {
  port: number;
  close(): Promise<void>;
}

/**
 * Listens on a free 127.0.0.1 port and answers the first bytes of each connection with
 * `-ERR unknown command` and a close, as a plain (non-TLS) Redis answers a TLS ClientHello: a TLS
 * client facing it fails its handshake at once.
 */
export async function startPlainTextServer(): Promise<PlainTextServer> {
  const server = net.createServer((socket) => {
    socket.on('error', () => undefined);
    socket.on('data', () => socket.end('-ERR unknown command\r\n'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
