import {
  Body,
  Controller,
  ForbiddenException,
  Get,
  Header,
  Headers,
  HttpCode,
  Inject,
  Param,
  Post,
  Query,
  Req,
  UseGuards,
  type Type,
} from '@nestjs/common';
import {
  assertSameOriginJson,
  parseDeleteBody,
  parseName,
  parsePageQuery,
  parseRedriveBody,
} from './dashboard-input';
import { DASHBOARD_OPTIONS } from '../dashboard.constants';
import type { ResolvedDashboardOptions } from '../dashboard-options.interface';
import { loadDashboardAssets, renderPage, type DashboardAssets } from '../dashboard-page';
import { DashboardService } from '../dashboard.service';

type RequestHeaders = Record<string, string | string[] | undefined>;
type QueryParams = Record<string, unknown>;
type PageRequest = { url?: string; originalUrl?: string };

/**
 * The content type of a file answer. The security headers are set on every answer under the
 * mount path, refusals included, by `DashboardGateMiddleware`, before anything else runs.
 */
const Typed = (contentType: string) => Header('Content-Type', contentType);

/**
 * The dashboard's routes, relative to the mount path (the subclass `mountDashboardController`
 * makes carries the path and the guards). Adapter-agnostic: only Nest decorators, no
 * Express or Fastify types (internal).
 */
export class DashboardController {
  private readonly assets: DashboardAssets = loadDashboardAssets();

  constructor(
    @Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    @Inject(DashboardService) private readonly dashboard: DashboardService,
  ) {}

  @Get()
  @Typed('text/html; charset=utf-8')
  page(@Req() request: PageRequest): string {
    // Express: originalUrl keeps the global prefix; Fastify: url does.
    const url = request.originalUrl ?? request.url ?? this.options.path;
    return renderPage(this.assets.html, url, this.options.readOnly);
  }

  @Get('assets/dashboard.js')
  @Typed('text/javascript; charset=utf-8')
  script(): string {
    return this.assets.script;
  }

  @Get('assets/dashboard.css')
  @Typed('text/css; charset=utf-8')
  style(): string {
    return this.assets.style;
  }

  @Get('assets/favicon.svg')
  @Typed('image/svg+xml')
  icon(): string {
    return this.assets.icon;
  }

  @Get('api/overview')
  overview() {
    return this.dashboard.overview();
  }

  @Get('api/streams/:stream/groups/:group/pending')
  pending(
    @Param('stream') stream: string,
    @Param('group') group: string,
    @Query() query: QueryParams,
  ) {
    return this.dashboard.pending(
      parseName(stream, 'stream'),
      parseName(group, 'group'),
      parsePageQuery(query),
    );
  }

  @Get('api/streams/:stream/dead-letters')
  deadLetters(@Param('stream') stream: string, @Query() query: QueryParams) {
    return this.dashboard.deadLetters(parseName(stream, 'stream'), parsePageQuery(query));
  }

  @Get('api/streams/:stream/entries')
  entries(@Param('stream') stream: string, @Query() query: QueryParams) {
    return this.dashboard.tail(parseName(stream, 'stream'), parsePageQuery(query));
  }

  @Post('api/streams/:stream/dead-letters/redrive')
  @HttpCode(200)
  redrive(
    @Param('stream') stream: string,
    @Headers() headers: RequestHeaders,
    @Body() body: unknown,
  ) {
    this.assertMutable(headers);
    return this.dashboard.redrive(parseName(stream, 'stream'), parseRedriveBody(body));
  }

  @Post('api/streams/:stream/groups/:group/pause')
  @HttpCode(200)
  pause(
    @Param('stream') stream: string,
    @Param('group') group: string,
    @Headers() headers: RequestHeaders,
  ) {
    this.assertMutable(headers);
    return this.dashboard.setPaused(parseName(stream, 'stream'), parseName(group, 'group'), true);
  }

  @Post('api/streams/:stream/groups/:group/resume')
  @HttpCode(200)
  resume(
    @Param('stream') stream: string,
    @Param('group') group: string,
    @Headers() headers: RequestHeaders,
  ) {
    this.assertMutable(headers);
    return this.dashboard.setPaused(parseName(stream, 'stream'), parseName(group, 'group'), false);
  }

  @Post('api/streams/:stream/dead-letters/delete')
  @HttpCode(200)
  delete(
    @Param('stream') stream: string,
    @Headers() headers: RequestHeaders,
    @Body() body: unknown,
  ) {
    this.assertMutable(headers);
    const { entryIds } = parseDeleteBody(body);
    return this.dashboard.deleteDeadLetters(parseName(stream, 'stream'), entryIds);
  }

  private assertMutable(headers: RequestHeaders): void {
    if (this.options.readOnly) {
      throw new ForbiddenException(
        'the dashboard is read-only: register it with readOnly: false to change anything',
      );
    }
    assertSameOriginJson(headers, this.options.allowedHosts);
  }
}

/** A controller class of its own for one registration: mounted at `path`, behind `guards`. */
export function mountDashboardController(
  options: ResolvedDashboardOptions,
): Type<DashboardController> {
  class EchoStreamDashboardController extends DashboardController {}
  Controller(options.path)(EchoStreamDashboardController);
  if (options.guards.length > 0) UseGuards(...options.guards)(EchoStreamDashboardController);
  return EchoStreamDashboardController;
}
