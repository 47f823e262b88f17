import { ConfigError } from './config-error';
import { loadEmbeddedSettings } from './embedded-settings';

describe('embedded engine settings', () => {
  it('runs the engine on the host thread unless worker is asked for', () => {
    expect(loadEmbeddedSettings({}).thread).toBe('main');
    expect(loadEmbeddedSettings({ OPENWOP_EMBEDDED_THREAD: ' worker ' }).thread).toBe('worker');
  });

  it('refuses any other OPENWOP_EMBEDDED_THREAD with a configuration error naming it', () => {
    for (const bad of ['threads', 'MAIN', 'worker,main']) {
      expect(() => loadEmbeddedSettings({ OPENWOP_EMBEDDED_THREAD: bad })).toThrow(ConfigError);
      expect(() => loadEmbeddedSettings({ OPENWOP_EMBEDDED_THREAD: bad })).toThrow(`OPENWOP_EMBEDDED_THREAD must be worker or main, got "${bad}"`);
    }
  });
});
