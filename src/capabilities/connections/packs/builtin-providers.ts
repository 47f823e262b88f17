import { Injectable } from '@nestjs/common';
import { BuiltinConnectionProvider, ConnectionProviderSource, ConnectionProviderSourceContract } from '@openwop-host/plugin-sdk';

/**
 * The providers the host ships. They are a version floor: an installed pack for the same id wins
 * when its version is >= the built-in's. Endpoints are the providers' public OAuth endpoints; the
 * OAuth client credentials are never part of a provider definition.
 */
export const HOST_BUILTIN_PROVIDERS: BuiltinConnectionProvider[] = [
  {
    version: '1.0.0',
    provider: {
      id: 'github',
      displayName: 'GitHub',
      category: 'dev',
      vendor: 'GitHub',
      auth: {
        kind: 'oauth2',
        authFlow: 'pkce',
        scopeModel: 'groups',
        endpoints: { authorize: 'https://github.com/login/oauth/authorize', token: 'https://github.com/login/oauth/access_token' },
        scopes: {
          read: [{ key: 'repo.read', label: 'Read repositories', scopes: ['read:org', 'read:user'] }],
          write: [{ key: 'repo.write', label: 'Write repositories, issues and pull requests', scopes: ['repo'] }],
        },
      },
      reach: { mcp: { server: { url: 'https://api.githubcopilot.com/mcp/', transport: 'http' } } },
      consumerNodes: ['core.openwop.mcp.invoke-tool'],
      docsUrl: 'https://docs.github.com/en/apps/oauth-apps',
      apiHosts: ['api.github.com', 'api.githubcopilot.com'],
    },
  },
  {
    version: '1.0.0',
    provider: {
      id: 'slack',
      displayName: 'Slack',
      category: 'communication',
      vendor: 'Salesforce',
      auth: {
        kind: 'oauth2',
        authFlow: 'pkce',
        scopeModel: 'groups',
        endpoints: { authorize: 'https://slack.com/oauth/v2/authorize', token: 'https://slack.com/api/oauth.v2.access', revoke: 'https://slack.com/api/auth.revoke' },
        scopes: {
          read: [{ key: 'channels.read', label: 'Read channels and history', scopes: ['channels:read', 'channels:history'] }],
          write: [{ key: 'chat.write', label: 'Post messages', scopes: ['chat:write'] }],
        },
      },
      reach: { openapi: { ref: 'https://api.slack.com/specs/openapi/v2/slack_web.json' } },
      docsUrl: 'https://api.slack.com/authentication/oauth-v2',
      apiHosts: ['slack.com'],
    },
  },
];

@Injectable()
@ConnectionProviderSource({ id: 'openwop-host.builtin' })
export class HostBuiltinConnectionProviders implements ConnectionProviderSourceContract {
  providers(): BuiltinConnectionProvider[] {
    return HOST_BUILTIN_PROVIDERS;
  }
}
