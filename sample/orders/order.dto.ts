import { IsBoolean, IsInt, IsOptional, IsString, Length, Max, Min } from 'class-validator';
import type { Order } from './order';

/**
 * An order as the billing handler accepts it: `@Payload(new ValidationPipe({ transform: true }))`
 * checks each entry against these rules and hands the handler an instance of this class. An
 * entry that breaks one is dead-lettered at once with reason `rejected` and the failed rules.
 */
export class OrderDto implements Order {
  @IsString()
  @Length(1, 64)
  sku!: string;

  @IsInt()
  @Min(1)
  @Max(1000)
  qty!: number;

  @IsOptional()
  @IsBoolean()
  poison?: boolean;
}
