import type { JSX } from 'preact';
import { ApprovalsPage } from '../pages/approvals';
import { AutomationsPage } from '../pages/automations';
import { ConnectionsPage } from '../pages/connections';
import { GoalsPage } from '../pages/goals';
import { McpPage } from '../pages/mcp';
import { PortabilityPage } from '../pages/portability';
import { ProposalsPage } from '../pages/proposals';
import { RunsPage } from '../pages/runs';
import { ToolsPage } from '../pages/tools';
import { WorkflowsPage } from '../pages/workflows';
import type { Route } from '../routes';
import { can, Identity } from '../session';

export interface PageDef {
  id: string;
  title: string;
  /** Shown (in the navigation and by address) only to a credential with the scopes it reads with. */
  visible: (i: Identity) => boolean;
  render: (i: Identity, route: Route) => JSX.Element;
}

/**
 * The console's pages in navigation order; `#/<id>` opens one, `#/<id>/<item>` an item of it. The first
 * page the credential may see is where sign-in lands: Runs, for an operator.
 */
export const PAGES: PageDef[] = [
  { id: 'runs', title: 'Runs', visible: (i) => can(i, 'runs:read'), render: (i, r) => <RunsPage identity={i} selected={r.id} /> },
  { id: 'approvals', title: 'Approvals', visible: (i) => can(i, 'approvals:respond'), render: (i) => <ApprovalsPage identity={i} /> },
  { id: 'workflows', title: 'Workflows', visible: (i) => can(i, 'manifest:read') || can(i, 'runs:create'), render: (i, r) => <WorkflowsPage identity={i} selected={r.id} /> },
  { id: 'automations', title: 'Automations', visible: (i) => can(i, 'proposals:read'), render: (i) => <AutomationsPage identity={i} /> },
  { id: 'tools', title: 'Tools', visible: (i) => can(i, 'tools:read'), render: (_i, r) => <ToolsPage selected={r.id} /> },
  { id: 'proposals', title: 'Proposals', visible: (i) => can(i, 'proposals:read'), render: (i, r) => <ProposalsPage identity={i} selected={r.id} /> },
  { id: 'goals', title: 'Goals', visible: (i) => can(i, 'goals:read'), render: (i, r) => <GoalsPage identity={i} selected={r.id} /> },
  { id: 'connections', title: 'Connections', visible: (i) => can(i, 'connections:read'), render: (i) => <ConnectionsPage identity={i} /> },
  { id: 'portability', title: 'Portability', visible: (i) => can(i, 'portability:export') || can(i, 'portability:import'), render: (i) => <PortabilityPage identity={i} /> },
  // Readable with tools:read (how to connect a client); its servers, pins and policy need tools:manage and say so.
  { id: 'mcp', title: 'MCP', visible: (i) => can(i, 'tools:read') || can(i, 'tools:manage'), render: (i) => <McpPage identity={i} /> },
];
