#!/usr/bin/env bash
# Runs the enterprise section of the official conformance suite (../shared/conformance/NEEDS.md, "enterprise",
# without the SAML subject-linking files) with the operator inputs its legs need, so that none returns early for
# want of one:
#   - the identity lanes through test/identity/conformance-identity.sh (a real OpenID provider for the OAuth2 lane,
#     the suite's synthetic issuer trusted for the OIDC lane);
#   - metrics pushed over OTLP every second and spans flushed within 200 ms, so metric-emission, otel-emission and
#     otel-trace-propagation see them within their 5 s windows;
#   - production-retention-expiry's expired-run leg through the host's force-expire seam: a loopback listener
#     (OPENWOP_TEST_FORCE_EXPIRE_PORT, honoured only with the test seams the runner turns on) whose
#     POST /runs/{runId}/expire the suite calls at OPENWOP_TEST_FORCE_EXPIRE_URL;
#   - production-backpressure against its own host with a per-tenant in-flight cap of 2 (OPENWOP_RUN_INFLIGHT_CAP):
#     the file holds cap + 1 five-second runs, which would refuse the other files' runs on a shared host.
# Usage (from the project root): test/operations/conformance-enterprise.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
FILES=(production-retention-expiry.test.ts auth-api-key-rotation.test.ts credentials-capability-shape.test.ts
  scheduling-capability-shape.test.ts workspace-capability-shape.test.ts debugBundle.test.ts otel-emission.test.ts
  metric-emission.test.ts otel-trace-propagation.test.ts authorization-fail-closed.test.ts approval-gate-flow.test.ts
  cross-workspace-isolation.test.ts auth-oidc-user-bearer.test.ts auth-oauth2-client-credentials.test.ts)
rc=0
freeport() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
FORCE_EXPIRE_PORT=$(freeport)
OPENWOP_TEST_FORCE_EXPIRE_PORT=$FORCE_EXPIRE_PORT OPENWOP_TEST_FORCE_EXPIRE_URL="http://127.0.0.1:$FORCE_EXPIRE_PORT/runs/{runId}/expire" \
OTEL_METRICS_EXPORTER=otlp OTEL_METRIC_EXPORT_INTERVAL=1000 OTEL_BSP_SCHEDULE_DELAY=200 \
  test/identity/conformance-identity.sh "${FILES[@]}" || rc=$?
OPENWOP_RUN_INFLIGHT_CAP=2 OPENWOP_OPTED_OUT_PROFILES= ../shared/conformance/run.sh . production-backpressure.test.ts || rc=$?
exit $rc
