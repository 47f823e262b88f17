import { jsonMemberText, stringifyVerbatim, submittedText, withVerbatimText } from './json-text';

describe('jsonMemberText', () => {
  it('returns the exact source text of a top-level member, whitespace and key order included', () => {
    const body = '{ "kind" : "x",\n  "artifact" :  {"z": 1,  "a" : [1, {"b":"}\\"]"}], "m": null } ,"title":"t"}';
    expect(jsonMemberText(body, 'artifact')).toBe('{"z": 1,  "a" : [1, {"b":"}\\"]"}], "m": null }');
    expect(jsonMemberText(body, 'kind')).toBe('"x"');
    expect(jsonMemberText(body, 'title')).toBe('"t"');
    expect(jsonMemberText(body, 'missing')).toBeUndefined();
  });

  it('ignores nested members of the same name, takes the last duplicate, and decodes escaped keys', () => {
    expect(jsonMemberText('{"a":{"artifact":1},"artifact":2}', 'artifact')).toBe('2');
    expect(jsonMemberText('{"artifact":1,"artifact":{"x":true}}', 'artifact')).toBe('{"x":true}');
    expect(jsonMemberText('{"\\u0061rtifact":[ ]}', 'artifact')).toBe('[ ]');
    expect(jsonMemberText('\uFEFF {"artifact":-1.5e3}', 'artifact')).toBe('-1.5e3');
  });

  it('answers undefined for a body that is not an object', () => {
    expect(jsonMemberText('[1]', 'artifact')).toBeUndefined();
    expect(jsonMemberText('{}', 'artifact')).toBeUndefined();
  });

  it('submittedText falls back to JSON.stringify without a raw body', () => {
    expect(submittedText(undefined, 'artifact', { b: 1, a: 2 })).toBe('{"b":1,"a":2}');
    expect(submittedText(' {"b" :1} ', undefined, {})).toBe('{"b" :1}');
  });
});

describe('stringifyVerbatim', () => {
  it('emits marked objects as their stored text and everything else as JSON.stringify does', () => {
    const artifact = withVerbatimText({ a: 1, z: 2 }, '{ "z":2,"a":1 }');
    const body = { id: 'p1', artifact, list: [withVerbatimText({}, '{"k" : "v"}')], s: '\u0000verbatim:0' };
    expect(stringifyVerbatim(body)).toBe('{"id":"p1","artifact":{ "z":2,"a":1 },"list":[{"k" : "v"}],"s":"\\u0000verbatim:0"}');
    expect(stringifyVerbatim({ plain: [1, 'x'] })).toBe(JSON.stringify({ plain: [1, 'x'] }));
  });
});
