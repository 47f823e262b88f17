import { can, Identity } from '../../session';
import { Section } from '../../ui';
import { ConnectClient } from './connect-client';
import { DispatchPolicyView } from './dispatch-policy';
import { ServersAndPins } from './servers';

const MANAGE = 'tools:manage';

/** Why the operator's sections are not shown: the scope, or a credential bound to a workspace (the routes are tenant-level). */
function NeedsManage({ identity }: { identity: Identity }) {
  const bound = can(identity, MANAGE) && identity.workspace;
  return (
    <Section title="MCP servers and pinned tools">
      <p class="callout" role="note">
        {bound ? (
          <>
            The MCP servers, their pinned tool definitions and the dispatch policy need a tenant-level credential holding <code>{MANAGE}</code>; this one is bound to
            workspace <code>{identity.workspace}</code>.
          </>
        ) : (
          <>
            The MCP servers, their pinned tool definitions and the dispatch policy need <code>{MANAGE}</code> (in the admin role), which this credential does not
            hold. Sign in with an admin key to review and approve held tool definitions.
          </>
        )}
      </p>
    </Section>
  );
}

/**
 * The operator's MCP page: the tenant's MCP servers and pinned tool definitions (held ones first, each with Approve),
 * the governed dispatch policy (read-only), and how to connect an MCP client to the host's own mount.
 */
export function McpPage({ identity }: { identity: Identity }) {
  const manage = can(identity, MANAGE) && !identity.workspace;
  return (
    <>
      {manage ? (
        <>
          <ServersAndPins />
          <DispatchPolicyView />
        </>
      ) : (
        <NeedsManage identity={identity} />
      )}
      <ConnectClient identity={identity} />
    </>
  );
}
