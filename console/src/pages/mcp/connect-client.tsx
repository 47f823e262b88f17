import { mcpMountUrl } from '../../api/mcp';
import type { Identity } from '../../session';
import { CopyButton, ErrorBanner, Facts, Loading, Section, useLoad } from '../../ui';

/** Stands in for the client's key: the console never shows a credential, its own or any other. */
export const KEY_PLACEHOLDER = '<API key of the client>';

/** The JSON an MCP client configured by file takes (the common `mcpServers` shape), with a placeholder key. */
export function clientConfig(url: string): string {
  return JSON.stringify({ mcpServers: { openwop: { type: 'http', url, headers: { Authorization: `Bearer ${KEY_PLACEHOLDER}` } } } }, null, 2);
}

/**
 * How an agent, IDE or chat app reaches this host's governed tools as an MCP server: the mount's URL (from
 * discovery's `mcp.serverUrls`) and a pasteable client configuration. Needs no scope beyond the page's.
 */
export function ConnectClient({ identity }: { identity: Identity }) {
  const mount = useLoad(mcpMountUrl, []);
  return (
    <Section title="Connect an MCP client">
      <ErrorBanner error={mount.error} />
      {mount.loading && mount.data === undefined ? <Loading what="the MCP mount" /> : null}
      {mount.data === null ? <p class="muted">This host serves no MCP mount (it is turned off with OPENWOP_MCP_SERVER=false).</p> : null}
      {mount.data ? (
        <>
          <Facts
            items={[
              [
                'Server URL',
                <span class="short-id">
                  <code class="mount-url">{mount.data}</code>
                  <CopyButton value={mount.data} what="MCP server URL" />
                </span>,
              ],
              ['Transport', 'Streamable HTTP, revisions 2026-07-28 and 2025-06-18'],
            ]}
          />
          <p>
            Give the client this URL and an API key as its bearer token. Create a key for the client with what it should be able to do and nothing more (add{' '}
            <code>approvals:respond</code> only for a client that may answer approvals itself):
          </p>
          <pre class="snippet" tabIndex={0} aria-label="Create a key for the client">
            {`openwop-host keys create --tenant ${identity.tenant} --principal agent:<name> --scopes tools:read,runs:create,runs:read`}
          </pre>
          <figure class="json">
            <figcaption>Client configuration (JSON; replace {KEY_PLACEHOLDER} with the client's key)</figcaption>
            <pre tabIndex={0} aria-label="MCP client configuration">
              {clientConfig(mount.data)}
            </pre>
          </figure>
        </>
      ) : null}
    </Section>
  );
}
