import { startProviderProcess } from './provider-process';

/** A running samlify identity provider (test/support/saml-idp-main.mjs) in a child process. */
export interface SamlIdp {
  /** Its base URL (the `idpUrl` the subject-linking seams take). */
  url: string;
  entityId: string;
  ssoUrl: string;
  /** The PEM certificate of its signing key (the private key never leaves the process). */
  certificate: string;
  /** Plays the person at the provider's login page: follows a host's AuthnRequest URL as `nameId`, returns the auto-post form's fields. */
  login(authnRequestUrl: string, person: { nameId: string; variant?: string; groups?: string[]; mail?: string; employeeNumber?: string }): Promise<{ action: string; SAMLResponse: string; RelayState: string }>;
  stop(): Promise<void>;
}

export async function startSamlIdp(config: { groups?: string[] } = {}): Promise<SamlIdp> {
  const { issuer, info, stop } = await startProviderProcess('saml-idp-main.mjs', config);
  return {
    url: issuer,
    entityId: info.entityId as string,
    ssoUrl: info.ssoUrl as string,
    certificate: info.certificate as string,
    async login(authnRequestUrl, person) {
      const u = new URL(authnRequestUrl);
      u.searchParams.set('nameId', person.nameId);
      u.searchParams.set('variant', person.variant ?? 'valid');
      if (person.groups) u.searchParams.set('groups', person.groups.join(','));
      if (person.mail) u.searchParams.set('mail', person.mail);
      if (person.employeeNumber) u.searchParams.set('employeeNumber', person.employeeNumber);
      const res = await fetch(u);
      const html = await res.text();
      if (!res.ok) throw new Error(`identity provider answered ${res.status}: ${html}`);
      const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1]?.replace(/&amp;/g, '&') ?? '';
      return { action: /action="([^"]+)"/.exec(html)![1], SAMLResponse: field('SAMLResponse'), RelayState: field('RelayState') };
    },
    stop,
  };
}
