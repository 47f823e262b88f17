#!/usr/bin/env bash
# Runs the official identity-profile scenarios (auth-oidc-user-bearer, auth-oauth2-client-credentials, auth-subject-link,
# auth-subject-link-key-class) non-vacuously: starts the real OpenID provider (test/support/oidc-provider-main.mjs) with a
# client-credentials client and two SAML providers, takes a token from it, and gives run.sh the operator inputs the
# files read, with the host configured to trust every issuer:
#   - OIDC lane: the suite's own synthetic issuer on OPENWOP_TEST_OIDC_ISSUER_URL (the file serves its
#     discovery + JWKS there once the host runs), audience openwop-conformance, group
#     openwop:operators -> editor;
#   - OAuth2 lane: the real provider, audience urn:openwop:conformance; OPENWOP_TEST_OAUTH_TOKEN is a
#     client-credentials token it issued;
#   - SAML + SCIM (auth-subject-link, auth-subject-link-key-class): two real SAML identity providers
#     (test/support/saml-idp-main.mjs, samlify; each makes its signing key at start) trusted by tenant
#     `conformance` (IdP A feeds its SCIM directory, IdP B is a second trust root), groups openwop-users ->
#     editor, a SCIM token for the tenant. OPENWOP_TEST_SAML_IDP_URL(_B) are the providers, OPENWOP_TEST_SCIM_URL
#     the host's SCIM base (the seam provisions the caller's tenant there). The ACS URL is the host's route on
#     loopback; the validate seam posts the provider's response to the same validation the ACS runs.
# Usage (from the project root): test/identity/conformance-identity.sh [scenario files...]
# Major 2: OPENWOP_PROTOCOL_MAJORS=1,2 OPENWOP_TARGET_MAJOR=2 test/identity/conformance-identity.sh v2-auth-challenge.test.ts \
#   v2-protected-resource-metadata.test.ts v2-oidc-id-token-audience.test.ts
set -euo pipefail
cd "$(dirname "$0")/../.."
FILES=("$@"); [ ${#FILES[@]} -gt 0 ] || FILES=(auth-oidc-user-bearer.test.ts auth-oauth2-client-credentials.test.ts auth-subject-link.test.ts auth-subject-link-key-class.test.ts)
freeport() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
AUD=openwop-conformance
API_AUD=urn:openwop:conformance   # a resource indicator must be an absolute URI (RFC 8707)
OUT=$(mktemp)
node test/support/oidc-provider-main.mjs "{\"clients\":[{\"client_id\":\"conformance-bot\",\"client_secret\":\"conformance-bot-secret-0123456789\",\"grant_types\":[\"client_credentials\"],\"response_types\":[],\"redirect_uris\":[],\"scope\":\"runs:read runs:create\"}],\"resource\":{\"audience\":\"$API_AUD\",\"scope\":\"runs:read runs:create\"}}" >"$OUT" 2>/dev/null &
IDP_PID=$!
SAML_DIR=$(mktemp -d)
node test/support/saml-idp-main.mjs '{"groups":["openwop-users"]}' >"$SAML_DIR/a.json" 2>/dev/null &
SAML_A_PID=$!
node test/support/saml-idp-main.mjs '{"groups":["openwop-users"]}' >"$SAML_DIR/b.json" 2>/dev/null &
SAML_B_PID=$!
trap 'kill $IDP_PID $SAML_A_PID $SAML_B_PID 2>/dev/null || true; rm -rf "$OUT" "$SAML_DIR"' EXIT
for _ in $(seq 1 100); do [ -s "$OUT" ] && [ -s "$SAML_DIR/a.json" ] && [ -s "$SAML_DIR/b.json" ] && break; sleep 0.1; done
IDP=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1],"utf8").split("\n")[0]).issuer)' "$OUT")
TOKEN=$(curl -sf -u conformance-bot:conformance-bot-secret-0123456789 -d grant_type=client_credentials -d 'scope=runs:read runs:create' "$IDP/token" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).access_token))')
SUITE_ISSUER="http://127.0.0.1:$(freeport)"
node -e '
const fs = require("fs"); const [dir] = process.argv.slice(1);
const idp = (f) => JSON.parse(fs.readFileSync(`${dir}/${f}.json`, "utf8").split("\n")[0]);
const a = idp("a"), b = idp("b"), roles = { "openwop-users": "editor" };
fs.writeFileSync(`${dir}/idps.json`, JSON.stringify({ idps: [
  { id: "conformance-a", tenant: "conformance", entityId: a.entityId, ssoUrl: a.ssoUrl, certificate: a.certificate, groupRoles: roles, scim: true },
  { id: "conformance-b", tenant: "conformance", entityId: b.entityId, ssoUrl: b.ssoUrl, certificate: b.certificate, groupRoles: roles } ] }));
fs.writeFileSync(`${dir}/urls`, `${a.issuer} ${b.issuer}\n`);' "$SAML_DIR"
read -r SAML_A SAML_B <"$SAML_DIR/urls"
export OPENWOP_SAML_IDPS_FILE="$SAML_DIR/idps.json" OPENWOP_SAML_SP_ENTITY_ID=urn:openwop:conformance-sp \
  OPENWOP_SAML_ACS_URL=http://127.0.0.1/console/auth/saml/acs \
  OPENWOP_SCIM_TOKENS="conformance=$(node -e 'console.log(require("crypto").randomBytes(24).toString("hex"))')" \
  OPENWOP_TEST_SAML_IDP_URL="$SAML_A" OPENWOP_TEST_SAML_IDP_URL_B="$SAML_B" OPENWOP_TEST_SCIM_URL=http://127.0.0.1/scim/v2
export OPENWOP_TEST_OIDC_ISSUER_URL="$SUITE_ISSUER" OPENWOP_TEST_OIDC_AUDIENCE="$AUD" \
  OPENWOP_TEST_OAUTH_ISSUER_TRUSTED=true OPENWOP_TEST_OAUTH_ISSUER_URL="$IDP" OPENWOP_TEST_OAUTH_TOKEN="$TOKEN" \
  OPENWOP_OIDC_ISSUERS="$SUITE_ISSUER" OPENWOP_OIDC_AUDIENCE="$AUD" OPENWOP_OIDC_DEFAULT_TENANT=conformance-oidc \
  OPENWOP_OIDC_GROUP_ROLES='{"*":{"openwop:operators":"editor"}}' \
  OPENWOP_OAUTH2_ISSUER="$IDP" OPENWOP_OAUTH2_AUDIENCE="$API_AUD" OPENWOP_OAUTH2_DEFAULT_TENANT=conformance-oauth
echo "real provider $IDP, suite issuer $SUITE_ISSUER, SAML providers $SAML_A $SAML_B"
OPENWOP_OPTED_OUT_PROFILES= ../shared/conformance/run.sh . "${FILES[@]}"
