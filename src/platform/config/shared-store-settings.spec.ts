import { ConfigError, loadHostConfig } from './host-config';
import { loadSharedStoreSettings } from './shared-store-settings';

describe('shared store settings (OPENWOP_REDIS_*)', () => {
  it('are off by default', () => {
    expect(loadSharedStoreSettings({})).toEqual({ keyPrefix: 'openwop:', timeoutMs: 250 });
    expect(loadHostConfig({}).sharedStore.redisUrl).toBeUndefined();
  });

  it('take redis:// and rediss:// URLs, with a password and a database number', () => {
    for (const url of ['redis://127.0.0.1:6379', 'redis://redis', 'rediss://:s3cret@redis.example:6380/2', 'redis://user:pw@[::1]:6379/15', 'redis://h/']) {
      expect(loadSharedStoreSettings({ OPENWOP_REDIS_URL: url }).redisUrl).toBe(url);
    }
    expect(loadHostConfig({ OPENWOP_REDIS_URL: 'redis://r:6379', OPENWOP_REDIS_KEY_PREFIX: 'team-a:', OPENWOP_REDIS_TIMEOUT_MS: '50' }).sharedStore).toEqual({
      redisUrl: 'redis://r:6379',
      keyPrefix: 'team-a:',
      timeoutMs: 50,
    });
  });

  it.each([
    [{ OPENWOP_REDIS_URL: 'http://redis:6379' }, /OPENWOP_REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL/],
    [{ OPENWOP_REDIS_URL: 'redis:6379' }, /OPENWOP_REDIS_URL/],
    [{ OPENWOP_REDIS_URL: 'not a url' }, /OPENWOP_REDIS_URL must be a redis/],
    [{ OPENWOP_REDIS_URL: 'redis://h:6379/16' }, /database number from 0 to 15/],
    [{ OPENWOP_REDIS_URL: 'redis://h:6379/x' }, /database number/],
    [{ OPENWOP_REDIS_URL: 'redis://h:6379?db=1' }, /no query or fragment/],
    [{ OPENWOP_REDIS_KEY_PREFIX: 'a b' }, /OPENWOP_REDIS_KEY_PREFIX/],
    [{ OPENWOP_REDIS_KEY_PREFIX: 'x'.repeat(65) }, /OPENWOP_REDIS_KEY_PREFIX/],
    [{ OPENWOP_REDIS_TIMEOUT_MS: '5' }, /OPENWOP_REDIS_TIMEOUT_MS must be between 10 and 10000/],
    [{ OPENWOP_REDIS_TIMEOUT_MS: 'fast' }, /OPENWOP_REDIS_TIMEOUT_MS must be a whole number/],
  ])('refuse %j at start (a ConfigError, before any database work)', (env, message) => {
    expect(() => loadHostConfig(env as NodeJS.ProcessEnv)).toThrow(ConfigError);
    expect(() => loadHostConfig(env as NodeJS.ProcessEnv)).toThrow(message);
  });

  it('never repeat a password in a refusal', () => {
    expect(() => loadSharedStoreSettings({ OPENWOP_REDIS_URL: 'http://:hunter2@redis:6379' })).toThrow(/http:\/\/\*\*\*@redis:6379/);
    expect(() => loadSharedStoreSettings({ OPENWOP_REDIS_URL: 'http://:hunter2@redis:6379' })).not.toThrow(/hunter2/);
  });
});
