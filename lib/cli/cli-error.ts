/** A refusal the CLI prints as one line before exiting with code 1. */
export class CliError extends Error {
  override readonly name = 'CliError';
}
