import { StatementNames } from './embedded-statement-names';
import { message } from './wire-protocol';

const cstr = (s: string) => Buffer.from(`${s}\0`);
const parse = (name: string, sql: string) => message(0x50, Buffer.concat([cstr(name), cstr(sql), Buffer.from([0, 0])]));
const bind = (name: string) => message(0x42, Buffer.concat([cstr(''), cstr(name), Buffer.from([0, 0, 0, 0, 0, 0])]));
const describe_ = (kind: 'S' | 'P', name: string) => message(0x44, Buffer.concat([Buffer.from(kind), cstr(name)]));
const close = (kind: 'S' | 'P', name: string) => message(0x43, Buffer.concat([Buffer.from(kind), cstr(name)]));
const query = (sql: string) => message(0x51, cstr(sql));
const sync = message(0x53, Buffer.alloc(0));

function execOf(steps: ReturnType<StatementNames['rewrite']>): Buffer {
  expect(steps).toHaveLength(1);
  return (steps[0] as { exec: Buffer }).exec;
}

describe('StatementNames (a wire connection\'s statement names on the shared backend)', () => {
  it('hands back the very batch when it names no statement (unnamed statements, portals, other queries)', () => {
    const names = new StatementNames('w7_');
    const batch = Buffer.concat([parse('', 'SELECT 1'), bind(''), describe_('P', 'portal'), close('P', 'portal'), query('SELECT 1'), sync]);
    expect(execOf(names.rewrite(batch))).toBe(batch);
    expect(names.used()).toEqual([]);
  });

  it('prefixes the statement names of Parse, Bind, Describe and Close, and keeps the rest of each message', () => {
    const names = new StatementNames('w7_');
    const batch = Buffer.concat([parse('s', 'SELECT $1'), bind('s'), describe_('S', 's'), describe_('P', ''), close('S', 's'), sync]);
    expect(execOf(names.rewrite(batch))).toEqual(Buffer.concat([parse('w7_s', 'SELECT $1'), bind('w7_s'), describe_('S', 'w7_s'), describe_('P', ''), close('S', 'w7_s'), sync]));
    expect(names.used()).toEqual(['w7_s']);
  });

  it('gives a name too long for PostgreSQL once prefixed (63 bytes) a short one of its own, the same at every use', () => {
    const names = new StatementNames('w7_');
    const long = 'x'.repeat(62);
    const a = names.backendName(long);
    expect(a).toBe('w7_#1');
    expect(names.backendName(long)).toBe(a);
    expect(names.backendName(`${long}y`)).toBe('w7_#2');
    expect(names.backendName('x'.repeat(60))).toBe(`w7_${'x'.repeat(60)}`);
  });

  it('rewrites DEALLOCATE of a name (quoted or not) and splits a batch around DEALLOCATE ALL', () => {
    const names = new StatementNames('w7_');
    expect(execOf(names.rewrite(query('DEALLOCATE "openwop_a"')))).toEqual(query('DEALLOCATE "w7_openwop_a"'));
    expect(execOf(names.rewrite(query('  deallocate prepare Foo;')))).toEqual(query('DEALLOCATE "w7_foo"'));
    expect(execOf(names.rewrite(query('DEALLOCATE "a""b"')))).toEqual(query('DEALLOCATE "w7_a""b"'));
    const steps = names.rewrite(Buffer.concat([query('SELECT 1'), query('DEALLOCATE ALL'), parse('s', 'SELECT 2'), sync]));
    expect(steps).toEqual([{ exec: query('SELECT 1') }, { deallocateAll: true }, { exec: Buffer.concat([parse('w7_s', 'SELECT 2'), sync]) }]);
    // Not a deallocation: left alone.
    const other = query("SELECT 'DEALLOCATE ALL'");
    expect(execOf(names.rewrite(other))).toBe(other);
  });

  it('closes every statement it named, then Syncs', () => {
    const names = new StatementNames('w7_');
    expect(names.closeMessages()).toBeUndefined();
    names.backendName('a');
    names.backendName('b');
    expect(names.closeMessages()).toEqual(Buffer.concat([close('S', 'w7_a'), close('S', 'w7_b'), sync]));
    names.forgetAll();
    expect(names.closeMessages()).toBeUndefined();
  });
});
