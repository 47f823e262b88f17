import type { FastifyInstance } from 'fastify';
import { DomainError } from '../../errors/domain-error';

export const SAML_ACS_PATH = '/console/auth/saml/acs';
/** A SAML response (base64, signed XML) with room to spare; anything larger is no sign-in. */
const MAX_FORM_BYTES = 1_048_576;

/**
 * The SAML HTTP-POST binding delivers the response as an HTML form post
 * (application/x-www-form-urlencoded). The host speaks JSON everywhere else: the form parser answers
 * only the assertion consumer service, every other route keeps refusing forms with 415.
 */
export function installSamlFormParser(fastify: FastifyInstance): void {
  fastify.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: MAX_FORM_BYTES }, (request, body, done) => {
    if (request.url.split('?')[0] !== SAML_ACS_PATH) {
      done(new DomainError('unsupported_media_type', 415, 'The request content type is not supported; send application/json.'), undefined);
      return;
    }
    const form: Record<string, string> = Object.create(null);
    for (const [k, v] of new URLSearchParams(body as string)) if (k === 'SAMLResponse' || k === 'RelayState') form[k] = v;
    done(null, form);
  });
}
