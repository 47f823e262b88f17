import { checkWorkspaceCeiling, loadWorkspaceSettings } from './workspace-settings';

describe('workspace settings: the file ceiling', () => {
  const host = (env: Record<string, string>) => ({
    maxRequestBodyBytes: Number(env.OPENWOP_MAX_BODY_BYTES ?? 1048576),
    json: { maxStringLength: Number(env.OPENWOP_JSON_MAX_STRING ?? 262144) },
  });

  it('defaults to 128 KiB on a host with the default limits', () => {
    expect(loadWorkspaceSettings({}).maxFileBytes).toBe(131072);
  });

  it('lowers the default to fit a smaller body or string limit, so the host still starts', () => {
    for (const env of [{ OPENWOP_MAX_BODY_BYTES: '4096' }, { OPENWOP_JSON_MAX_STRING: '2000' }] as Array<Record<string, string>>) {
      const s = loadWorkspaceSettings(env);
      expect(s.maxFileBytes).toBe(env.OPENWOP_MAX_BODY_BYTES ? 3072 : 1999);
      expect(() => checkWorkspaceCeiling(s, host(env))).not.toThrow();
    }
  });

  it('refuses an explicit ceiling the body limit cannot carry', () => {
    const env = { OPENWOP_MAX_BODY_BYTES: '4096', OPENWOP_WORKSPACE_MAX_FILE_BYTES: '131072' };
    expect(() => checkWorkspaceCeiling(loadWorkspaceSettings(env), host(env))).toThrow(/at least 1024 bytes below OPENWOP_MAX_BODY_BYTES/);
  });
});
