#!/usr/bin/env bash
# Runs the workflows section of the official conformance suite (../shared/conformance/NEEDS.md, "workflows") with the
# operator input its OAuth leg needs, so that no leg returns early for want of one:
#   - every file but the OAuth one on one host, as the runner starts it;
#   - oauth-authorization-code-roundtrip on a host holding an OAuth client for the suite's synthetic provider (the
#     runner's own OPENWOP_CONFIG names its fake MCP server, which this file does not use, so that one is turned off).
# The dispatch-* files are not run: multi-agent dispatch (core.dispatch, agents.dispatchMapping) is not claimed.
# Usage (from the project root): test/workflows/conformance-workflows.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
FILES=(budget-enforcement.test.ts budget-policy-shape.test.ts chain-compensation-expansion.test.ts
  chain-produced-var-roundtrip.test.ts chain-subchain-cycle-rejected.test.ts chain-subchain-fanout.test.ts
  chain-subchain-sibling.test.ts compensation-behavior.test.ts compensation-recovery.test.ts
  deadletter-capability-shape.test.ts deadletter-retry-exhaustion.test.ts egress-audience-binding.test.ts
  egress-decision-content-free.test.ts egress-provenance-shape.test.ts safefetch-behavior.test.ts
  safefetch-live-audit.test.ts subrun-approval-fail-closed.test.ts subrun-approval-gate.test.ts
  subrun-attestation-shape.test.ts subrun-checksum-stable.test.ts subworkflow.test.ts subworkflow-input-mapping.test.ts
  workflow-chain-deferred-parameters.test.ts workflow-chain-expansion.test.ts workflow-chain-host-expansion.test.ts
  workflow-chain-pack-manifest-validation.test.ts workflow-chain-pack-signature-verification.test.ts
  workflow-chain-unresolvable-typeid.test.ts workflow-primary-output-annotation.test.ts workflow-variable-format.test.ts)
rc=0
../shared/conformance/run.sh . "${FILES[@]}" || rc=$?
config=$(mktemp)
trap 'rm -f "$config"' EXIT
echo '{"connections":{"oauth":{"callbackUrl":"https://host.example/openwop/oauth/callback","clients":{"synthetic":{"clientId":"openwop-conformance"}}}}}' >"$config"
OPENWOP_MCP_FAKE_SERVER=false OPENWOP_CONFIG="$config" ../shared/conformance/run.sh . oauth-authorization-code-roundtrip.test.ts || rc=$?
exit $rc
