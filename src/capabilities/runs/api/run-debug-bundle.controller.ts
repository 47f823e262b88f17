import { Controller, Get, Param, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { HOST_NAME, HOST_VERSION } from '../../../platform/discovery/discovery.service';
import { EventLogService, RunEventView } from '../../../platform/events/event-log.service';
import { CurrentPrincipal, Scopes } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { recordedRunSpans } from '../../../platform/tracing/run-spans';
import { RunsService } from '../runs.service';
import { buildDebugBundle, DEBUG_BUNDLE_MAX_BYTES } from './run-debug-bundle';

/** Events read per statement while the bundle is assembled. */
const PAGE = 1000;

/** GET /v1/runs/{runId}/debug-bundle (spec v1 debug-bundle.md): one run's diagnostic state, masked and capped. */
@ApiTags('runs')
@Controller()
export class RunDebugBundleController {
  constructor(
    private readonly runs: RunsService,
    private readonly events: EventLogService,
  ) {}

  /**
   * The run as `GET /v1/runs/{runId}` answers it and its whole event log in order (as
   * `/events/poll` answers them), every string a person or a tool supplied masked
   * (`redactionMode: "mask"`), at most 8 MB of events (`truncated` says when the log was cut), the
   * run's spans this replica recorded while tracing is on, with
   * `Cache-Control: no-store`. Another tenant's or workspace's run is `404`, like an unknown one.
   */
  @Scopes('runs:read')
  @Get('/v1/runs/:runId/debug-bundle')
  @ApiOperation({ operationId: 'getRunDebugBundle', summary: 'Export one run’s diagnostic state (snapshot, events, metrics), secret-free and size-capped' })
  @ApiParam({ name: 'runId' })
  @ApiOkResponse({
    description: 'The run debug bundle (debug-bundle.schema.json): `bundleVersion`, `generatedAt`, `host`, `run` (masked snapshot), `events` (masked payloads), `spans` (the run’s spans as this replica recorded them while exporting them, `openwop.run` in the creating request’s trace; empty while tracing is off or for a run another replica executed), `metrics` (`eventCount` = `events.length`), `redactionApplied`, `redactionMode: "mask"`, and `truncated`/`truncatedReason` when the log was cut at the size cap.',
    schema: {
      type: 'object',
      required: ['bundleVersion', 'generatedAt', 'host', 'run', 'events', 'redactionApplied', 'redactionMode'],
      properties: {
        bundleVersion: { type: 'string', example: '1.0' },
        generatedAt: { type: 'string', format: 'date-time' },
        host: { type: 'object', required: ['name', 'version'], properties: { name: { type: 'string' }, version: { type: 'string' } } },
        run: { type: 'object', description: 'The run as GET /v1/runs/{runId} answers it, masked.', additionalProperties: true },
        events: { type: 'array', items: { type: 'object', additionalProperties: true }, description: 'The run log as /events/poll answers its events, payloads masked.' },
        spans: { type: 'array', items: { type: 'object', additionalProperties: true } },
        metrics: { type: 'object', properties: { openwopCost: { type: 'object', nullable: true, additionalProperties: true }, nodeCount: { type: 'integer' }, eventCount: { type: 'integer' } } },
        redactionApplied: { type: 'boolean' },
        redactionMode: { type: 'string', enum: ['mask'] },
        truncated: { type: 'boolean' },
        truncatedReason: { type: 'string' },
      },
      additionalProperties: true,
    },
  })
  @ApiErrors(401, 403, 404)
  async bundle(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Res({ passthrough: true }) reply: FastifyReply): Promise<unknown> {
    const snapshot = await this.runs.get(p, runId);
    const events: RunEventView[] = [];
    let after = 0;
    let bytes = 0;
    let more = false;
    for (;;) {
      const page = await this.events.read(p, snapshot.runId, { afterSequence: after, limit: PAGE });
      events.push(...page);
      for (const e of page) bytes += Buffer.byteLength(JSON.stringify(e.payload));
      if (page.length < PAGE) break;
      after = page[page.length - 1].sequence;
      // Far past the cap: stop reading (the builder cuts at the cap and says the log goes on).
      if (bytes > 2 * DEBUG_BUNDLE_MAX_BYTES) {
        more = true;
        break;
      }
    }
    void reply.header('cache-control', 'no-store');
    const spans = recordedRunSpans(snapshot.runId);
    return buildDebugBundle(snapshot, events, { name: HOST_NAME, version: HOST_VERSION }, { moreEvents: more, spans: spans.spans, spansDropped: spans.dropped });
  }
}
