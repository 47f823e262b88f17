// A real SAML 2.0 identity provider (samlify) for the SAML sign-in tests and the subject-linking
// conformance run, in a process of its own. Its signing key and certificate are made at start
// (openssl, in a temporary directory removed at once) and never leave the process but the certificate.
// Configured by one JSON argument: { port?: number, groups?: string[] }.
// Prints one line `{"issuer": "<base URL>", "entityId", "ssoUrl", "certificate"}` once listening.
//
// GET /sso?SAMLRequest=…&RelayState=…  (HTTP-Redirect binding) is the login page: the person's
// choices come as query parameters — `nameId` (the persistent subject), `variant`, `groups`
// (comma-separated), `mail` — and the answer is the HTTP-POST binding's auto-submitting form carrying
// the signed SAMLResponse to the AssertionConsumerServiceURL of the request. Variants:
//   valid            a response to the request, the assertion signed with the provider's key
//   bad-signature    signed with another key (same entityID)
//   tampered         signed, then the NameID changed (the digest no longer matches)
//   wrong-audience   the assertion names another service provider
//   wrong-issuer     issued (and correctly signed) under another entityID
//   wrong-recipient  Destination and Recipient are another ACS
//   expired          NotOnOrAfter an hour ago
//   not-yet-valid    NotBefore in an hour
//   email-name-id    the subject is an emailAddress NameID (`nameId` as given)
//   fixed-assertion-id  a valid response whose assertion id is the same every time for this nameId
//                    (a captured assertion re-wrapped for a new request: its id was seen before)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inflateRawSync } from 'node:zlib';
import samlify from 'samlify';

const cfg = JSON.parse(process.argv[2] ?? '{}');
// The provider trusts its own parsing of the AuthnRequest; the host under test is what validates.
samlify.setSchemaValidator({ validate: async () => 'skipped' });

function keyPair() {
  const dir = mkdtempSync(path.join(tmpdir(), 'saml-idp-'));
  try {
    const key = path.join(dir, 'key.pem');
    const cert = path.join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-sha256', '-days', '2', '-subj', '/CN=openwop-test-idp', '-keyout', key, '-out', cert], { stdio: 'ignore' });
    return { privateKey: readFileSync(key, 'utf8'), certificate: readFileSync(cert, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const server = createServer();
await new Promise((resolve) => server.listen(cfg.port ?? 0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}`;
const entityId = `${base}/metadata`;
const ssoUrl = `${base}/sso`;
const { binding } = samlify.Constants.namespace;
const PERSISTENT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';
const EMAIL = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';

const own = keyPair();
const rogue = keyPair();
const idpOf = (keys, entityID) =>
  samlify.IdentityProvider({
    entityID,
    privateKey: keys.privateKey,
    signingCert: keys.certificate,
    singleSignOnService: [{ Binding: binding.redirect, Location: ssoUrl }],
    singleLogoutService: [{ Binding: binding.redirect, Location: `${base}/slo` }],
    nameIDFormat: [PERSISTENT, EMAIL],
    wantAuthnRequestsSigned: false,
  });
const idps = { own: idpOf(own, entityId), rogue: idpOf(rogue, entityId), other: idpOf(own, `${base}/another-idp`) };

const escapeXml = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]);

function attributeStatement(attrs) {
  const parts = Object.entries(attrs)
    .filter(([, v]) => v !== undefined && (!Array.isArray(v) || v.length))
    .map(([name, v]) => `<saml:Attribute Name="${escapeXml(name)}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:basic">${(Array.isArray(v) ? v : [v]).map((x) => `<saml:AttributeValue xsi:type="xs:string">${escapeXml(x)}</saml:AttributeValue>`).join('')}</saml:Attribute>`);
  return parts.length ? `<saml:AttributeStatement>${parts.join('')}</saml:AttributeStatement>` : '';
}

async function login(query) {
  const xml = inflateRawSync(Buffer.from(query.get('SAMLRequest') ?? '', 'base64')).toString('utf8');
  const requestId = /<(?:\w+:)?AuthnRequest\b[^>]*\bID="([^"]+)"/.exec(xml)?.[1];
  const spEntity = /<(?:\w+:)?Issuer[^>]*>([^<]+)</.exec(xml)?.[1];
  const acs = /\bAssertionConsumerServiceURL="([^"]+)"/.exec(xml)?.[1];
  if (!requestId || !spEntity || !acs) return { status: 400, body: 'not an AuthnRequest' };
  const variant = query.get('variant') ?? 'valid';
  const nameId = query.get('nameId');
  if (!nameId) return { status: 400, body: 'nameId is required (the person signing in)' };
  const sp = samlify.ServiceProvider({ entityID: spEntity, assertionConsumerService: [{ Binding: binding.post, Location: acs }], wantAssertionsSigned: true });
  const idp = variant === 'bad-signature' ? idps.rogue : variant === 'wrong-issuer' ? idps.other : idps.own;
  // samlify reads the request (id, issuer) the way it would for any service provider.
  const requestInfo = await idp.parseLoginRequest(sp, 'redirect', { query: Object.fromEntries(query) });
  const now = Date.now();
  const iso = (ms) => new Date(ms).toISOString();
  const groups = (query.get('groups') ?? (cfg.groups ?? []).join(',')).split(',').filter(Boolean);
  const recipient = variant === 'wrong-recipient' ? 'https://elsewhere.invalid/console/auth/saml/acs' : acs;
  const values = {
    ID: `_r${Math.random().toString(16).slice(2)}${now}`,
    AssertionID: variant === 'fixed-assertion-id' ? `_a-fixed-${Buffer.from(nameId).toString('hex').slice(0, 64)}` : `_a${Math.random().toString(16).slice(2)}${now}`,
    Destination: recipient,
    Audience: variant === 'wrong-audience' ? 'urn:openwop:another-service-provider' : spEntity,
    SubjectRecipient: recipient,
    Issuer: variant === 'wrong-issuer' ? `${base}/another-idp` : entityId,
    IssueInstant: iso(variant === 'expired' ? now - 7_200_000 : now),
    StatusCode: samlify.Constants.StatusCode.Success,
    ConditionsNotBefore: iso(variant === 'expired' ? now - 7_200_000 : variant === 'not-yet-valid' ? now + 3_600_000 : now - 30_000),
    ConditionsNotOnOrAfter: iso(variant === 'expired' ? now - 3_600_000 : now + 300_000),
    SubjectConfirmationDataNotOnOrAfter: iso(variant === 'expired' ? now - 3_600_000 : now + 300_000),
    NameIDFormat: variant === 'email-name-id' ? EMAIL : PERSISTENT,
    NameID: nameId,
    InResponseTo: requestInfo?.extract?.request?.id ?? requestId,
    AuthnStatement: '',
  };
  const statement = attributeStatement({ groups, mail: query.get('mail') ?? undefined, employeeNumber: query.get('employeeNumber') ?? undefined });
  const { context } = await idp.createLoginResponse(sp, requestInfo, 'post', {}, (template) => ({
    id: values.ID,
    context: samlify.SamlLib.replaceTagsByValue(template.replace('{AttributeStatement}', statement), values),
  }));
  let response = context;
  if (variant === 'tampered') {
    const raw = Buffer.from(context, 'base64').toString('utf8').replace(`>${escapeXml(nameId)}</saml:NameID>`, `>${escapeXml(nameId)}-someone-else</saml:NameID>`);
    response = Buffer.from(raw, 'utf8').toString('base64');
  }
  const relay = query.get('RelayState') ?? '';
  return {
    status: 200,
    type: 'text/html; charset=utf-8',
    body: `<!doctype html><html><body onload="document.forms[0].submit()"><form method="post" action="${escapeXml(acs)}"><input type="hidden" name="SAMLResponse" value="${escapeXml(response)}"/><input type="hidden" name="RelayState" value="${escapeXml(relay)}"/><noscript><button type="submit">Continue</button></noscript></form></body></html>`,
  };
}

server.on('request', (req, res) => {
  const url = new URL(req.url ?? '/', base);
  const send = ({ status, type = 'text/plain', body }) => res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' }).end(body);
  if (req.method === 'GET' && url.pathname === '/sso') {
    login(url.searchParams).then(send, (e) => send({ status: 500, body: String(e?.stack ?? e) }));
  } else if (req.method === 'GET' && url.pathname === '/metadata') {
    send({ status: 200, type: 'application/samlmetadata+xml', body: idps.own.getMetadata() });
  } else send({ status: 404, body: 'not found' });
});

process.on('SIGTERM', () => server.close(() => process.exit(0)));
process.stdout.write(`${JSON.stringify({ issuer: base, entityId, ssoUrl, certificate: own.certificate })}\n`);
