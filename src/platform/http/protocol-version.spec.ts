import { toV2Envelope } from '../errors/v2-envelope';
import { bindRunAnswer, wireSegment } from './bound-ids';
import { clientVersion, isManifestPath, requestedMajor, resolveProtocol } from './protocol-version';

describe('protocol majors: resolving a request before routing', () => {
  const both = [1, 2];

  it('reads OpenWOP-Version as a major: 2 and 2.0 alike, anything else NaN', () => {
    expect([requestedMajor('2'), requestedMajor('2.0'), requestedMajor(' 1.0 ')]).toEqual([2, 2, 1]);
    for (const bad of ['v2', '2.0.0', '02', '', 'banana']) expect(requestedMajor(bad)).toBeNaN();
  });

  it('reads OpenWOP-Client-Version, a malformed value counting as absent', () => {
    expect(clientVersion('1.2')).toEqual([1, 2]);
    expect(clientVersion('1.2.3')).toEqual([1, 2]);
    for (const bad of ['1', '01.0', '1.0-rc.1', undefined]) expect(clientVersion(bad)).toBeUndefined();
  });

  it('knows the v2 manifest paths, parameters included', () => {
    for (const p of ['/runs', '/runs/abc', '/runs/abc:fork', '/runs:bulk-cancel', '/interrupts/tok', '/.well-known/openwop', '/prompts:render']) expect(isManifestPath(p)).toBe(true);
    for (const p of ['/goals', '/v1/runs', '/runs/a/b/c', '/console', '/healthz']) expect(isManifestPath(p)).toBe(false);
  });

  it('/v1 is major 1; another major there is a mismatch; seams under /v1 have no major', () => {
    expect(resolveProtocol('/v1/runs?limit=1', undefined, both)).toEqual({ url: '/v1/runs?limit=1', protocol: { major: 1, version: '1.0' } });
    expect(resolveProtocol('/v1/runs', '1.0', both).protocol?.refusal).toBeUndefined();
    expect(resolveProtocol('/v1/runs', '2', both).protocol?.refusal).toEqual(expect.objectContaining({ code: 'protocol_version_mismatch', status: 400 }));
    expect(resolveProtocol('/v1/host/sample/test/reset', '2.0', both)).toEqual({ url: '/v1/host/sample/test/reset' });
    // Proprietary /v1/host/<org>/... routes (the MCP mount) have no major either; the manifest's host operations do.
    expect(resolveProtocol('/v1/host/openwop/mcp', '2.0', both)).toEqual({ url: '/v1/host/openwop/mcp' });
    expect(resolveProtocol('/v1/host/effect-seams', '2.0', both).protocol?.refusal?.code).toBe('protocol_version_mismatch');
  });

  it('an unversioned operation runs its /v1 twin under major 2, and under header-less major 1 while 2 is served', () => {
    // The v2 poll cursor (a v2 sequence, from 0) is the v1 handler's lastSequence (stored sequences start at 1).
    expect(resolveProtocol('/runs/r1/events/poll?afterSequence=2', '2.0', both)).toEqual({ url: '/v1/runs/r1/events/poll?lastSequence=3', protocol: { major: 2, version: '2.0' } });
    expect(resolveProtocol('/runs/r1/events/poll?timeout=1&lastSequence=9', '2.0', both).url).toBe('/v1/runs/r1/events/poll?timeout=1');
    expect(resolveProtocol('/runs/r1/events/poll?afterSequence=x', '2.0', both).url).toBe('/v1/runs/r1/events/poll?lastSequence=x');
    // Major 1 keeps its own cursor.
    expect(resolveProtocol('/runs/r1/events/poll?afterSequence=2', undefined, both).url).toBe('/v1/runs/r1/events/poll?afterSequence=2');
    expect(resolveProtocol('/runs', undefined, both)).toEqual({ url: '/v1/runs', protocol: { major: 1, version: '1.0' } });
    // Discovery is one resource with two representations: never rewritten.
    expect(resolveProtocol('/.well-known/openwop', '2', both).url).toBe('/.well-known/openwop');
    // A host serving major 1 only keeps its unversioned paths.
    expect(resolveProtocol('/runs', undefined, [1])).toEqual({ url: '/runs', protocol: { major: 1, version: '1.0' } });
  });

  it('an unlisted major on an unversioned operation is 406 with the served list', () => {
    const r = resolveProtocol('/runs', '2.0', [1]);
    expect(r.protocol?.refusal).toEqual(expect.objectContaining({ code: 'protocol_version_unsupported', status: 406, details: { protocolVersions: ['1.0'] } }));
    expect(resolveProtocol('/runs', '3', both).protocol?.refusal?.details).toEqual({ protocolVersions: ['1.0', '2.0'] });
  });

  it('under major 2 an operation of a family not advertised at v2 is not routed (404), nor one without a v2 representation', () => {
    for (const p of ['/prompts', '/prompts/t1', '/content/settings', '/agents', '/runs/r1/compensation', '/runs/r1/artifacts/a1']) {
      expect(resolveProtocol(p, '2.0', both).url).toBe(p);
    }
    // Families with a record are routed to their v1 handler; /openapi.json answers the v2 document.
    expect(resolveProtocol('/tools/x', '2.0', both).url).toBe('/v1/tools/x');
    expect(resolveProtocol('/openapi.json', '2', both).url).toBe('/v1/openapi.json');
    // Header-less (major 1) they run the v1 handler, under v1's name where it differs.
    expect(resolveProtocol('/prompts/t1', undefined, both).url).toBe('/v1/prompt-templates/t1');
  });

  it('the v2 seams profile paths reach the /v1 seams while major 2 is served', () => {
    expect(resolveProtocol('/conformance/seams/sample/test/reset', '2.0', both)).toEqual({ url: '/v1/host/sample/test/reset' });
    expect(resolveProtocol('/conformance/seams/sample/test/reset', '2.0', [1])).toEqual({ url: '/conformance/seams/sample/test/reset' });
  });
});

describe('the v2 error envelope', () => {
  it('keeps a registered code at its registered status', () => {
    expect(toV2Envelope(501, { error: 'capability_not_provided', message: 'm' })).toEqual({ status: 422, body: { error: 'capability_not_provided', message: 'm' } });
    expect(toV2Envelope(404, { error: 'not_found', message: 'm', details: { runId: 'r' } })).toEqual({ status: 404, body: { error: 'not_found', message: 'm', details: { runId: 'r' } } });
  });

  it('turns a code the registry does not know into a vendor code, keeping the status', () => {
    expect(toV2Envelope(405, { error: 'method_not_allowed', message: 'm' })).toEqual({ status: 405, body: { error: 'openwop-host.method_not_allowed', message: 'm' } });
  });

  it('moves no retry timing into details (Retry-After only)', () => {
    expect(toV2Envelope(429, { error: 'rate_limited', message: 'm', details: { retryAfterMs: 5000 } })).toEqual({ status: 429, body: { error: 'rate_limited', message: 'm' } });
  });
});

describe('tenant-bound run ids under major 2', () => {
  const id = '0f8c2b1e-5d4a-4c3b-9a21-7e6f5d4c3b2a';

  it('unbinds the run id segment (~2F or %2F) before routing and records the tenant', () => {
    expect(resolveProtocol(`/runs/acme~2F${id}/events/poll?timeout=1`, '2', [1, 2])).toEqual({ url: `/v1/runs/${id}/events/poll?timeout=1`, protocol: { major: 2, version: '2.0', boundTenant: 'acme' } });
    expect(resolveProtocol(`/runs/acme%2f${id}:pause`, '2', [1, 2]).url).toBe(`/v1/runs/${id}:pause`);
    // A bare id resolves under the caller's tenant through the overlap; major 1 never unbinds.
    expect(resolveProtocol(`/runs/${id}`, '2', [1, 2])).toEqual({ url: `/v1/runs/${id}`, protocol: { major: 2, version: '2.0' } });
    expect(resolveProtocol(`/runs/acme~2F${id}`, undefined, [1, 2]).url).toBe(`/v1/runs/acme~2F${id}`);
  });
});

describe('binding run answers', () => {
  const id = '0f8c2b1e-5d4a-4c3b-9a21-7e6f5d4c3b2a';

  it('projects a bound id into one path segment with ~XX', () => {
    expect(wireSegment(`acme/${id}`)).toBe(`acme~2F${id}`);
    expect(wireSegment('a@b/x~y')).toBe('a~40b~2Fx~7Ey');
  });

  it('binds the run ids of run answers, never inside run data', () => {
    const snapshot = { runId: id, fork: { sourceRunId: id, mode: 'replay', fromSeq: 1 }, outputs: { runId: id }, eventsUrl: `http://h:80/v1/runs/${id}/events`, statusUrl: `http://h:80/v1/runs/${id}` };
    expect(bindRunAnswer(snapshot, 'acme')).toEqual({
      runId: `acme/${id}`,
      fork: { sourceRunId: `acme/${id}`, mode: 'replay', fromSeq: 1 },
      outputs: { runId: id },
      eventsUrl: `/runs/acme~2F${id}/events`,
      statusUrl: `/runs/acme~2F${id}`,
    });
    expect(bindRunAnswer({ events: [{ runId: id, payload: { runId: id } }], runs: [{ runId: id }] }, 'acme')).toEqual({ events: [{ runId: `acme/${id}`, payload: { runId: id } }], runs: [{ runId: `acme/${id}` }] });
    // An id that is already bound, or not an opaque id, is left alone.
    expect(bindRunAnswer({ runId: `acme/${id}` }, 'acme')).toEqual({ runId: `acme/${id}` });
    expect(bindRunAnswer({ runId: 'short' }, 'acme')).toEqual({ runId: 'short' });
  });
});

describe('v2 codes for v1 run-control refusals', () => {
  it('names a refusal by a finished run run_terminal, any other run_state_conflict', () => {
    expect(toV2Envelope(409, { error: 'run_not_paused', message: 'm', details: { runStatus: 'completed' } }).body.error).toBe('run_terminal');
    expect(toV2Envelope(409, { error: 'run_not_pausable', message: 'm', details: { runStatus: 'paused' } })).toEqual({ status: 409, body: { error: 'run_state_conflict', message: 'm', details: { runStatus: 'paused' } } });
  });
});
