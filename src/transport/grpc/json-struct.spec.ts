import { parse, Root } from 'protobufjs';
import {
  camelToSnake,
  jsonToListValue,
  jsonToStruct,
  jsonToValue,
  listValueToJson,
  ProtoJsonCodec,
  ProtoJsonError,
  snakeToCamel,
  structToJson,
  valueToJson,
} from './json-struct';

function thrown(fn: () => unknown): ProtoJsonError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ProtoJsonError) return e;
    throw e;
  }
  throw new Error('expected a ProtoJsonError');
}

describe('JSON ↔ google.protobuf.Value / Struct / ListValue', () => {
  const samples: unknown[] = [
    null,
    true,
    false,
    0,
    -1.5,
    1e300,
    Number.MAX_SAFE_INTEGER,
    '',
    'héllo ✓ \u0000',
    [],
    {},
    [1, 'a', null, false, [[]], { k: {} }],
    { nested: { deeper: { list: [{ a: 1 }, { b: [null] }] } }, 'key/with~odd chars': 'v', '': 'empty key' },
  ];

  it.each(samples.map((s) => [JSON.stringify(s), s]))('round-trips %s', (_, sample) => {
    expect(valueToJson(jsonToValue(sample))).toEqual(sample);
  });

  it('builds the object form proto-loader serializes', () => {
    expect(jsonToValue({ a: [1, null], b: 'x', c: true })).toEqual({
      structValue: {
        fields: {
          a: { listValue: { values: [{ numberValue: 1 }, { nullValue: 'NULL_VALUE' }] } },
          b: { stringValue: 'x' },
          c: { boolValue: true },
        },
      },
    });
  });

  it('writes what JSON.stringify writes: undefined members left out, undefined items as null, toJSON honoured', () => {
    const at = new Date('2026-01-02T03:04:05.678Z');
    const input = { keep: 1, gone: undefined, fn: () => 1, list: [undefined, 2], at };
    expect(structToJson(jsonToStruct(input))).toEqual(JSON.parse(JSON.stringify(input)));
    expect(structToJson(jsonToStruct(input))).toEqual({ keep: 1, list: [null, 2], at: '2026-01-02T03:04:05.678Z' });
  });

  it('keeps member names as data, including "constructor" and "toString"', () => {
    const input = { constructor: 1, toString: 'x', hasOwnProperty: null };
    const back = structToJson(jsonToStruct(input));
    expect(back).toEqual(input);
    expect(Object.keys(back)).toEqual(['constructor', 'toString', 'hasOwnProperty']);
  });

  it('refuses what JSON cannot carry, naming where', () => {
    expect(thrown(() => jsonToValue({ a: { b: NaN } })).path).toBe('/a/b');
    expect(thrown(() => jsonToValue([0, Infinity])).path).toBe('/1');
    expect(thrown(() => jsonToValue(BigInt(1))).problem).toMatch(/bigint is not a JSON value/);
    expect(thrown(() => jsonToValue(undefined)).problem).toMatch(/undefined is not a JSON value/);
    expect(thrown(() => jsonToStruct({ 'a/b': { '~': NaN } })).path).toBe('/a~1b/~0');
  });

  it('refuses a "__proto__" member rather than losing it in protobufjs', () => {
    const e = thrown(() => jsonToStruct(JSON.parse('{"ok":1,"inner":{"__proto__":{"x":1}}}')));
    expect(e.path).toBe('/inner/__proto__');
  });

  it('refuses the wrong container', () => {
    expect(thrown(() => jsonToStruct([1])).problem).toMatch(/expected a JSON object, got an array/);
    expect(thrown(() => jsonToStruct(null)).problem).toMatch(/got null/);
    expect(thrown(() => jsonToListValue({})).problem).toMatch(/expected a JSON array/);
  });

  it('reads an empty Struct or ListValue that decoded without its map or list', () => {
    expect(structToJson({})).toEqual({});
    expect(listValueToJson({})).toEqual([]);
    expect(valueToJson({ structValue: {} })).toEqual({});
    expect(valueToJson({ listValue: {} })).toEqual([]);
  });

  it('reads NULL_VALUE by name or number', () => {
    expect(valueToJson({ nullValue: 'NULL_VALUE' })).toBeNull();
    expect(valueToJson({ nullValue: 0 })).toBeNull();
  });

  it('refuses a Value with no kind, two kinds, or a kind of the wrong type', () => {
    expect(thrown(() => valueToJson({})).problem).toMatch(/no kind set/);
    expect(thrown(() => valueToJson({ stringValue: 'a', numberValue: 1 })).problem).toMatch(/sets numberValue and stringValue/);
    expect(thrown(() => valueToJson({ numberValue: '1' })).problem).toMatch(/is not a JSON number/);
    expect(thrown(() => valueToJson({ numberValue: NaN })).problem).toMatch(/is not a JSON number/);
    expect(thrown(() => valueToJson({ boolValue: 'true' })).problem).toMatch(/boolValue must be a boolean/);
    expect(thrown(() => valueToJson({ nullValue: 'NOTHING' })).problem).toMatch(/nullValue must be NULL_VALUE/);
    expect(thrown(() => structToJson({ fields: { a: { listValue: { values: [{}, {}] } } } })).path).toBe('/a/0');
  });
});

describe('field names', () => {
  it.each([
    ['workflow_id', 'workflowId'],
    ['run_id', 'runId'],
    ['event_log_schema_version', 'eventLogSchemaVersion'],
    ['a2a_task_state', 'a2aTaskState'],
    ['ok', 'ok'],
  ])('%s ↔ %s', (snake, camel) => {
    expect(snakeToCamel(snake)).toBe(camel);
    expect(camelToSnake(camel)).toBe(snake);
  });

  it('follows protoc for doubled and trailing underscores', () => {
    expect(snakeToCamel('x__y')).toBe('xY');
    expect(snakeToCamel('x_')).toBe('x');
  });
});

describe('ProtoJsonCodec', () => {
  const root = new Root();
  parse(
    `syntax = "proto3";
     package t.v1;
     import "google/protobuf/struct.proto";
     enum Color { COLOR_UNSPECIFIED = 0; RED = 1; }
     message Item { string name = 1; optional int32 count = 2; }
     message Doc {
       string id = 1;
       optional string note = 2;
       bool ok = 3;
       optional bool flag = 4;
       int64 seq = 5;
       optional int64 big = 6;
       repeated string tags = 7;
       repeated Item items = 8;
       google.protobuf.Struct inputs = 9;
       google.protobuf.Value payload = 10;
       Item main = 11;
       Color color = 12;
       optional double ratio = 13;
       optional string renamed = 14 [json_name = "otherName"];
       google.protobuf.Struct additional_properties = 100;
     }
     message Closed { string a = 1; }`,
    root,
    { keepCase: true },
  );
  root.loadSync('google/protobuf/struct.proto');
  root.resolveAll();
  const codec = new ProtoJsonCodec(root, { required: { 't.v1.Doc': ['id', 'ok', 'seq', 'items'] } });

  it('maps a body to the message and back, unknown members through additional_properties', () => {
    const body = {
      id: 'd1',
      note: '',
      ok: false,
      flag: false,
      seq: 0,
      big: 9007199254740991,
      tags: ['a', 'b'],
      items: [{ name: 'x', count: 0 }, { name: 'y' }],
      inputs: { some_key: { camelCase: [1] } },
      payload: 'just a string',
      main: { name: 'm' },
      color: 'RED',
      ratio: 0.25,
      otherName: 'r',
      extra: { kept: true },
      alsoExtra: null,
    };
    const message = codec.fromJson('t.v1.Doc', body);
    expect(message).toMatchObject({ id: 'd1', note: '', flag: false, renamed: 'r', inputs: { fields: { some_key: { structValue: { fields: { camelCase: expect.anything() } } } } } });
    expect(message.additional_properties).toEqual({ fields: { extra: { structValue: { fields: { kept: { boolValue: true } } } }, alsoExtra: { nullValue: 'NULL_VALUE' } } });
    expect(codec.toJson('t.v1.Doc', message)).toEqual(body);
  });

  it('writes required scalars and lists at their default when the peer left them out; leaves the rest out', () => {
    expect(codec.toJson('t.v1.Doc', {})).toEqual({ id: '', ok: false, seq: 0, items: [] });
    expect(codec.toJson('t.v1.Doc', { tags: [] })).toEqual({ id: '', ok: false, seq: 0, items: [] });
  });

  it('reads 64-bit integers as numbers, strings or Longs, and refuses what a JSON number cannot hold exactly', () => {
    expect(codec.toJson('t.v1.Doc', { seq: '42' }).seq).toBe(42);
    expect(codec.toJson('t.v1.Doc', { seq: { low: 5, high: 1, unsigned: false } }).seq).toBe(2 ** 32 + 5);
    expect(codec.toJson('t.v1.Doc', { seq: { low: -1, high: -1, unsigned: false } }).seq).toBe(-1);
    expect(thrown(() => codec.toJson('t.v1.Doc', { seq: '9007199254740993' })).path).toBe('/seq');
    expect(thrown(() => codec.fromJson('t.v1.Doc', { seq: 2 ** 53 })).problem).toMatch(/fits int64/);
    expect(thrown(() => codec.fromJson('t.v1.Doc', { seq: 1.5 })).problem).toMatch(/integer/);
    expect(thrown(() => codec.fromJson('t.v1.Item', { name: 'x', count: 2 ** 31 })).path).toBe('/count');
  });

  it('refuses members of the wrong type, null for a non-Value field, and unknown members of a closed message', () => {
    expect(thrown(() => codec.fromJson('t.v1.Doc', { id: 1 })).path).toBe('/id');
    expect(thrown(() => codec.fromJson('t.v1.Doc', { note: null })).problem).toMatch(/null is not a value for note/);
    expect(thrown(() => codec.fromJson('t.v1.Doc', { tags: 'a' })).problem).toMatch(/must be an array/);
    expect(thrown(() => codec.fromJson('t.v1.Doc', { items: [{ name: 'x', other: 1 }] })).path).toBe('/items/0/other');
    expect(thrown(() => codec.fromJson('t.v1.Doc', { color: 'BLUE' })).problem).toMatch(/not a value of Color/);
    expect(thrown(() => codec.fromJson('t.v1.Closed', { a: 'x', b: 1 })).problem).toMatch(/Closed has no member b/);
    expect(codec.fromJson('t.v1.Doc', { payload: null })).toEqual({ payload: { nullValue: 'NULL_VALUE' } });
  });

  it('refuses a message with fields the type does not have, or additional_properties repeating a declared member', () => {
    expect(thrown(() => codec.toJson('t.v1.Doc', { idd: 'x' })).problem).toMatch(/Doc has no field idd/);
    expect(thrown(() => codec.toJson('t.v1.Doc', { constructor: 'x' })).problem).toMatch(/Doc has no field constructor/);
    expect(thrown(() => codec.toJson('t.v1.Doc', { id: 'x', additional_properties: { fields: { id: { stringValue: 'y' } } } })).path).toBe('/id');
    expect(thrown(() => codec.toJson('t.v1.Doc', { ok: 'yes' })).path).toBe('/ok');
    expect(thrown(() => codec.toJson('t.v1.Doc', { ratio: NaN })).path).toBe('/ratio');
  });

  it('reads enums by number too', () => {
    expect(codec.toJson('t.v1.Doc', { color: 1 }).color).toBe('RED');
  });

  it('refuses a required-field list that names a field the type does not have', () => {
    expect(() => new ProtoJsonCodec(root, { required: { 't.v1.Doc': ['nope'] } })).toThrow(/t.v1.Doc has no field nope/);
    expect(() => new ProtoJsonCodec(root, { required: { 't.v1.Doc': ['toString'] } })).toThrow(/t.v1.Doc has no field toString/);
  });
});
