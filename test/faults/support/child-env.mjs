/**
 * What the fault specs' child processes (consumer-, producer-, pipeline-, retention-process.mjs)
 * read from their environment.
 */
import * as path from 'node:path';

/** The value of `name`; a child without it says so and exits 2 (the fleet reports its stderr). */
export function required(name) {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`${path.basename(process.argv[1], '.mjs')}: ${name} is required\n`);
    process.exit(2);
  }
  return value;
}
