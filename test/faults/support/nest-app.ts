/**
 * Fault tests that go through the Nest glue: an app of `EchoStreamModule.forRoot(...)` and the
 * test's handlers, and a logger that keeps what the app logged.
 */
import type { INestApplication, LoggerService, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { EchoStreamModule, type EchoStreamModuleOptions } from '../../../lib';

/**
 * A Nest app of `EchoStreamModule.forRoot(options)` and the `handlers` module, logging to
 * `logger`; not initialised yet (`app.init()` starts the loops).
 */
export async function createEchoStreamApp(
  options: EchoStreamModuleOptions,
  handlers: Type<unknown>,
  logger: LoggerService,
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [EchoStreamModule.forRoot(options), handlers],
  }).compile();
  return moduleRef.createNestApplication({ logger });
}

/** A Nest LoggerService that keeps `level context: message` lines. */
export class CaptureLogger implements LoggerService {
  readonly lines: string[] = [];
  log(message: unknown, context?: string): void {
    this.push('log', message, context);
  }
  warn(message: unknown, context?: string): void {
    this.push('warn', message, context);
  }
  error(message: unknown, stackOrContext?: string, context?: string): void {
    this.push('error', message, context ?? stackOrContext);
  }
  debug(message: unknown, context?: string): void {
    this.push('debug', message, context);
  }
  verbose(message: unknown, context?: string): void {
    this.push('verbose', message, context);
  }
  has(pattern: RegExp): boolean {
    return this.lines.some((line) => pattern.test(line));
  }
  matching(pattern: RegExp): string[] {
    return this.lines.filter((line) => pattern.test(line));
  }
  private push(level: string, message: unknown, context: string | undefined): void {
    this.lines.push(`${level} ${context ?? '-'}: ${String(message)}`);
  }
}
