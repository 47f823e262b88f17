import { attestationOf, canonicalize, mergesAfter } from './subrun-attestation';

describe('sub-run attestation (RFC 0063)', () => {
  it('canonicalizes as RFC 8785 (JCS): sorted keys at every depth, no whitespace, ECMAScript numbers', () => {
    expect(canonicalize({ b: [1, 'x', null, { z: true, y: false }], a: { d: 2, c: 1 } })).toBe('{"a":{"c":1,"d":2},"b":[1,"x",null,{"y":false,"z":true}]}');
    expect(canonicalize({ n: 1e21, f: 0.1, neg: -0, s: 'é\n' })).toBe('{"f":0.1,"n":1e+21,"neg":0,"s":"é\\n"}');
  });

  it('hashes the canonical form with SHA-256, whatever the key order', () => {
    expect(attestationOf({ a: 1 })).toEqual({ checksum: '015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862', algorithm: 'sha256' });
    expect(attestationOf({ report: 'done', score: 0.9, tags: ['a', 'b'] })).toEqual(attestationOf({ tags: ['a', 'b'], score: 0.9, report: 'done' }));
    expect(attestationOf({ tags: ['a', 'b'] }).checksum).not.toBe(attestationOf({ tags: ['b', 'a'] }).checksum);
  });

  it('merges without a gate; with one only on accept or edit-accept (an absent answer fails closed)', () => {
    expect(mergesAfter(undefined, undefined)).toBe(true);
    expect(mergesAfter({ checksum: true }, undefined)).toBe(true);
    for (const [action, merged] of [['accept', true], ['edit-accept', true], ['reject', false], ['ask', false], [undefined, false]] as const) {
      expect(mergesAfter({ requireApproval: true }, action)).toBe(merged);
    }
  });
});
