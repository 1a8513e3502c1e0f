export { DeadLettersHandler, type RecentDeadLetter } from './dead-letters.handler';
export { DeadLettersModule } from './dead-letters.module';
