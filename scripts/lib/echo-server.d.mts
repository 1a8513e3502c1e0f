/** Types of scripts/lib/echo-server.mjs (which server build the throw-away servers run). */
export interface FetchedServer {
  product: 'Valkey' | 'Redis';
  package: string;
  suites: readonly string[];
  series: string;
}
export declare const FETCHED_SERVERS: Readonly<
  Record<'valkey8' | 'valkey9' | 'redis8' | 'redis86', FetchedServer>
>;
export type ServerName = 'redis7' | keyof typeof FETCHED_SERVERS;
export declare const SERVER_NAMES: readonly ServerName[];
export interface ServerCommand {
  name: ServerName;
  label: string;
  /** The program to spawn. */
  command: string;
  /** Arguments before the server's own (the loader's `--library-path ... <binary>`). */
  args: string[];
  cli: { command: string; args: string[] };
  /** False (with `reason`) for a fetched build not fetched yet. */
  available: boolean;
  reason?: string;
}
export declare function serversDir(): string;
export declare function chosenServer(env?: NodeJS.ProcessEnv): ServerName;
export declare function serverCommand(name?: ServerName): ServerCommand;
