/** Bad module or handler configuration, found at decoration or bootstrap time. */
export class EchoStreamConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EchoStreamConfigError';
  }
}
