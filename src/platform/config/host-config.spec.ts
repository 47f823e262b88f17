import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ConfigError, ENV_SETTINGS, loadHostConfig } from './host-config';
import { HOST_SCOPES } from '../identity/scopes';

describe('host configuration', () => {
  it('has defaults that start a local host', () => {
    const c = loadHostConfig({});
    expect(c).toEqual(expect.objectContaining({ port: 8080, host: '127.0.0.1', testSeams: false, maxRequestBodyBytes: 1048576, proposalsActivation: 'direct-rbac' }));
    expect(c.databaseUrl).toBeUndefined();
  });

  it.each([
    [{ PORT: 'abc' }, /PORT must be a whole number/],
    [{ PORT: '70000' }, /PORT must be between/],
    [{ OPENWOP_TEST_SEAMS: 'maybe' }, /OPENWOP_TEST_SEAMS must be true or false/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL must be a postgres/],
    [{ OPENWOP_PROPOSALS_ACTIVATION: 'yolo' }, /OPENWOP_PROPOSALS_ACTIVATION/],
    [{ OPENWOP_FORK_UNINSTALLED_CHAINS: 'sometimes' }, /OPENWOP_FORK_UNINSTALLED_CHAINS must be refuse or allow, got "sometimes"/],
    [{ OPENWOP_JWT_ALGORITHMS: 'none' }, /unsupported algorithm "none"/],
    [{ OPENWOP_JWT_JWKS_URL: 'https://idp/jwks' }, /needs OPENWOP_JWT_ISSUER/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    [{ OPENWOP_API_KEY_PREFIX: 'Bad-' }, /OPENWOP_API_KEY_PREFIX/],
    [{ OPENWOP_MAX_BODY_BYTES: '10' }, /OPENWOP_MAX_BODY_BYTES must be between/],
    [{ OPENWOP_CREDENTIAL_KEYS: 'k1' }, /OPENWOP_CREDENTIAL_KEYS: each entry is id:base64key/],
    [{ OPENWOP_CREDENTIAL_KEYS: 'k1:c2hvcnQ=' }, /OPENWOP_CREDENTIAL_KEYS: key "k1" must be 32 bytes/],
    [{ OPENWOP_CREDENTIAL_KEYS: ' , ' }, /OPENWOP_CREDENTIAL_KEYS is set but holds no key/],
  ])('refuses %j', (env, message) => {
    expect(() => loadHostConfig(env as NodeJS.ProcessEnv)).toThrow(ConfigError);
    expect(() => loadHostConfig(env as NodeJS.ProcessEnv)).toThrow(message);
  });

  it('reads and validates the OPENWOP_CONFIG file (JSON or YAML)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cfg-'));
    const yaml = path.join(dir, 'c.yaml');
    fs.writeFileSync(yaml, 'plugins:\n  acme.x:\n    a: 1\n');
    expect(loadHostConfig({ OPENWOP_CONFIG: yaml }).file.plugins).toEqual({ 'acme.x': { a: 1 } });
    const bad = path.join(dir, 'bad.json');
    fs.writeFileSync(bad, '{"unknownSection": {}}');
    expect(() => loadHostConfig({ OPENWOP_CONFIG: bad })).toThrow(/is invalid: \/unknownSection/);
    const broken = path.join(dir, 'broken.json');
    fs.writeFileSync(broken, '{');
    expect(() => loadHostConfig({ OPENWOP_CONFIG: broken })).toThrow(/not valid JSON/);
    expect(() => loadHostConfig({ OPENWOP_CONFIG: path.join(dir, 'missing.json') })).toThrow(/cannot read/);
  });

  it('takes OPENWOP_PLUGINS_DIR as an absolute folder, and refuses one that is not a folder before any database work', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owh-plugins-'));
    expect(loadHostConfig({}).pluginsDir).toBeUndefined();
    expect(loadHostConfig({ OPENWOP_PLUGINS_DIR: path.relative(process.cwd(), dir) }).pluginsDir).toBe(dir);
    expect(() => loadHostConfig({ OPENWOP_PLUGINS_DIR: path.join(dir, 'missing') })).toThrow(ConfigError);
    fs.writeFileSync(path.join(dir, 'file'), '');
    expect(() => loadHostConfig({ OPENWOP_PLUGINS_DIR: path.join(dir, 'file') })).toThrow(/OPENWOP_PLUGINS_DIR: .* is not a folder/);
  });

  it('documents every setting and every scope in the README or its docs/ pages', () => {
    const root = path.join(__dirname, '../../..');
    const docs = fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md'));
    const readme = [path.join(root, 'README.md'), ...docs.map((f) => path.join(root, 'docs', f))].map((f) => fs.readFileSync(f, 'utf8')).join('\n');
    const missing = ENV_SETTINGS.map((s) => s.name).filter((n) => !readme.includes(`| \`${n}\` |`));
    expect(missing).toEqual([]);
    const missingScopes = Object.keys(HOST_SCOPES).filter((s) => !readme.includes(`| \`${s}\` |`));
    expect(missingScopes).toEqual([]);
  });
});
