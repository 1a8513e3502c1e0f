import {
  applyDecorators,
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
import { DASHBOARD_OPTIONS, CONTENT_SECURITY_POLICY } from './dashboard.constants';
import type { ResolvedDashboardOptions } from './dashboard-options.interface';
import { loadDashboardAssets, renderPage, type DashboardAssets } from './dashboard-page';
import { DashboardService } from './dashboard.service';

type RequestHeaders = Record<string, string | string[] | undefined>;
type QueryParams = Record<string, unknown>;

/** Headers of every answer: the strict CSP, no sniffing, no caching, no referrer. */
const Secured = (contentType?: string) =>
  applyDecorators(
    Header('Content-Security-Policy', CONTENT_SECURITY_POLICY),
    Header('X-Content-Type-Options', 'nosniff'),
    Header('Cache-Control', 'no-store'),
    Header('Referrer-Policy', 'no-referrer'),
    ...(contentType ? [Header('Content-Type', contentType)] : []),
  );

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
  @Secured('text/html; charset=utf-8')
  page(@Req() request: { url?: string; originalUrl?: string }): string {
    // Express: originalUrl keeps the global prefix; Fastify: url does.
    const url = request.originalUrl ?? request.url ?? this.options.path;
    return renderPage(this.assets.html, url, this.options.readOnly);
  }

  @Get('assets/dashboard.js')
  @Secured('text/javascript; charset=utf-8')
  script(): string {
    return this.assets.script;
  }

  @Get('assets/dashboard.css')
  @Secured('text/css; charset=utf-8')
  style(): string {
    return this.assets.style;
  }

  @Get('assets/favicon.svg')
  @Secured('image/svg+xml')
  icon(): string {
    return this.assets.icon;
  }

  @Get('api/overview')
  @Secured()
  overview() {
    return this.dashboard.overview();
  }

  @Get('api/streams/:stream/groups/:group/pending')
  @Secured()
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
  @Secured()
  deadLetters(@Param('stream') stream: string, @Query() query: QueryParams) {
    return this.dashboard.deadLetters(parseName(stream, 'stream'), parsePageQuery(query));
  }

  @Get('api/streams/:stream/entries')
  @Secured()
  entries(@Param('stream') stream: string, @Query() query: QueryParams) {
    return this.dashboard.tail(parseName(stream, 'stream'), parsePageQuery(query));
  }

  @Post('api/streams/:stream/dead-letters/redrive')
  @HttpCode(200)
  @Secured()
  redrive(
    @Param('stream') stream: string,
    @Headers() headers: RequestHeaders,
    @Body() body: unknown,
  ) {
    this.assertMutable(headers);
    return this.dashboard.redrive(parseName(stream, 'stream'), parseRedriveBody(body));
  }

  @Post('api/streams/:stream/dead-letters/delete')
  @HttpCode(200)
  @Secured()
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
    assertSameOriginJson(headers);
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
