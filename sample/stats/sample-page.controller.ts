import { Controller, Get, Header } from '@nestjs/common';
import { SAMPLE_PAGE } from './sample-page';
import { SampleSummaryService, type SampleSummary } from './sample-summary.service';

/** `GET /` (the sample's page) and `GET /stats` (its JSON: the summary). */
@Controller()
export class SamplePageController {
  constructor(private readonly sample: SampleSummaryService) {}

  @Get()
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  page(): string {
    return SAMPLE_PAGE;
  }

  @Get('stats')
  @Header('Cache-Control', 'no-store')
  summary(): Promise<SampleSummary> {
    return this.sample.summary();
  }
}
