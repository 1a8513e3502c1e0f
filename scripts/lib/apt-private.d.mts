/** Types of scripts/lib/apt-private.mjs (apt on a private state, from the machine's own archive). */
export declare class ArchiveUnavailableError extends Error {}
export interface Archive {
  uri: string;
  signedBy?: string;
}
export declare function machineArchive(): Archive;
export declare function archiveFrom(files: ReadonlyArray<{ path: string; text: string }>): Archive;
export declare class PrivateApt {
  constructor(dir: string, suites: readonly string[]);
  update(): Promise<void>;
  versions(pkg: string): Promise<Array<{ version: string; suite: string | undefined }>>;
  show(spec: string): Promise<Record<string, string> | undefined>;
  showMany(specs: readonly string[]): Promise<Array<Record<string, string>>>;
  download(specs: readonly string[], dir: string): Promise<void>;
}
