/**
 * A loopback TCP proxy for fault tests: put it between a client and a real `redis-server` and
 * cut, stall, delay or drop traffic on demand.
 */
import * as net from 'node:net';

const HOST = '127.0.0.1';

type Direction = 'toServer' | 'toClient';

interface Queued {
  at: number;
  chunk: Buffer;
}

/** One proxied connection: client socket <-> upstream socket. */
class Link {
  readonly queues: Record<Direction, Queued[]> = { toServer: [], toClient: [] };
  readonly timers: Record<Direction, NodeJS.Timeout | undefined> = {
    toServer: undefined,
    toClient: undefined,
  };
  closed = false;

  constructor(
    readonly client: net.Socket,
    readonly server: net.Socket,
  ) {}

  target(dir: Direction): net.Socket {
    return dir === 'toServer' ? this.server : this.client;
  }

  destroy(): void {
    this.closed = true;
    for (const dir of ['toServer', 'toClient'] as const) {
      clearTimeout(this.timers[dir]);
      this.timers[dir] = undefined;
      this.queues[dir].length = 0;
    }
    this.client.destroy();
    this.server.destroy();
  }
}

/** A TCP proxy on a free 127.0.0.1 port forwarding to `127.0.0.1:<targetPort>`. */
export class TcpProxy {
  private readonly links = new Set<Link>();
  private blackholed = false;
  private delayMs = 0;
  private pendingReplyDrops = 0;
  private stopped = false;

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    readonly targetPort: number,
    readonly targetHost: string,
  ) {}

  /** Listens on a free loopback port and forwards every connection to the target. */
  static async start(targetPort: number, targetHost: string = HOST): Promise<TcpProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, HOST, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const addr = server.address();
    if (!addr || typeof addr !== 'object') throw new Error('TcpProxy: no listening address');
    const proxy = new TcpProxy(server, addr.port, targetPort, targetHost);
    server.on('connection', (socket) => proxy.accept(socket));
    return proxy;
  }

  /** Live proxied connections. */
  get connectionCount(): number {
    return this.links.size;
  }

  /** Destroys every live connection (both sides); new connections are still accepted. */
  cutAll(): void {
    for (const link of [...this.links]) this.drop(link);
  }

  /**
   * `true`: silently discard every byte in both directions and stop propagating closes, while
   * keeping all sockets open (a half-open link; new connections are accepted but go nowhere).
   * `false`: forward again (discarded bytes stay lost); links whose other side closed meanwhile
   * are then closed.
   */
  blackhole(on: boolean): void {
    this.blackholed = on;
    if (!on) {
      for (const link of [...this.links]) {
        if (link.client.destroyed || link.server.destroyed) this.drop(link);
      }
    }
  }

  /** Delays every chunk (both directions, order kept) by `ms`; 0 turns it off. */
  setDelay(ms: number): void {
    this.delayMs = Math.max(0, ms);
  }

  /** Discards the next chunk coming from the server (on any connection). Cumulative. */
  dropNextReply(): void {
    this.pendingReplyDrops++;
  }

  /** Closes the listener and every connection. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.cutAll();
    await closed;
  }

  private accept(client: net.Socket): void {
    if (this.stopped) {
      client.destroy();
      return;
    }
    const upstream = net.connect({ host: this.targetHost, port: this.targetPort });
    const link = new Link(client, upstream);
    this.links.add(link);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.on('data', (chunk: Buffer) => this.forward(link, 'toServer', chunk));
    upstream.on('data', (chunk: Buffer) => this.forward(link, 'toClient', chunk));
    for (const s of [client, upstream]) {
      s.on('error', () => undefined);
      s.on('close', () => {
        // While blackholed the peer must not learn about the close (half-open link).
        if (!this.blackholed) this.drop(link);
      });
    }
  }

  private drop(link: Link): void {
    if (!this.links.delete(link)) return;
    link.destroy();
  }

  private forward(link: Link, dir: Direction, chunk: Buffer): void {
    if (link.closed || this.blackholed) return;
    if (dir === 'toClient' && this.pendingReplyDrops > 0) {
      this.pendingReplyDrops--;
      return;
    }
    const queue = link.queues[dir];
    if (this.delayMs === 0 && queue.length === 0) {
      link.target(dir).write(chunk);
      return;
    }
    const last = queue.length ? queue[queue.length - 1].at : 0;
    queue.push({ at: Math.max(Date.now() + this.delayMs, last), chunk });
    this.pump(link, dir);
  }

  /** Writes due chunks in order and arms one timer for the next. */
  private pump(link: Link, dir: Direction): void {
    if (link.closed || link.timers[dir]) return;
    const queue = link.queues[dir];
    while (queue.length && queue[0].at <= Date.now()) {
      link.target(dir).write(queue.shift()!.chunk);
    }
    if (queue.length) {
      link.timers[dir] = setTimeout(() => {
        link.timers[dir] = undefined;
        this.pump(link, dir);
      }, queue[0].at - Date.now());
    }
  }
}
