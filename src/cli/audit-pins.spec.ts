import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { AuditCliError, defaultPinFile, readPins, writePins } from './audit-pins';

describe('audit pin file', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'audit-pins-'));

  it('defaults under the user\'s state folder', () => {
    if (process.platform === 'win32') return;
    expect(defaultPinFile({ XDG_STATE_HOME: '/state' })).toBe('/state/openwop-host/audit-pins.json');
    expect(defaultPinFile({})).toBe(path.join(os.homedir(), '.local', 'state', 'openwop-host', 'audit-pins.json'));
  });

  it('no file yet is no pin; a written state reads back, owner-only, in a folder it creates', () => {
    const file = path.join(dir, 'a', 'b', 'pins.json');
    expect(readPins(file)).toEqual({ version: 1, pins: {} });
    const pin = { checkpoint: 'ckpt_1', atSequence: 4, merkleRoot: 'ab'.repeat(32), signature: 'c2ln', publicKey: 'a2V5', verifiedAt: '2026-01-01T00:00:00.000Z' };
    writePins(file, { version: 1, pins: { 'http://h t': pin } });
    expect(readPins(file).pins['http://h t']).toEqual(pin);
    expect(fs.statSync(file).mode & 0o077).toBe(0);
  });

  it('a file that is not a pin state is refused, never taken for "no pin"', () => {
    for (const [name, text, message] of [
      ['junk.json', '{', /is not JSON/],
      ['other.json', '{"version":2,"pins":{}}', /is not an audit pin file/],
      ['bad-pin.json', '{"version":1,"pins":{"x":{"checkpoint":"c"}}}', /is not an audit pin file/],
    ] as const) {
      const file = path.join(dir, name);
      fs.writeFileSync(file, text);
      expect(() => readPins(file)).toThrow(AuditCliError);
      expect(() => readPins(file)).toThrow(message);
    }
  });
});
