import { Module } from '@nestjs/common';
import { DeadLettersHandler } from './dead-letters.handler';

/** The dead letters of every stream, kept for the page. */
@Module({ providers: [DeadLettersHandler], exports: [DeadLettersHandler] })
export class DeadLettersModule {}
