#!/usr/bin/env node
'use strict';
/**
 * A Node client of the host's gRPC transport (openwop.v1.Engine): reads the capabilities, starts a
 * run of a workflow, follows its events until the run ends, and prints the final snapshot.
 *
 *   OPENWOP_GRPC_TARGET=127.0.0.1:50051 OPENWOP_API_KEY=owk_... node examples/grpc-client/run-workflow.js <workflowId> ['{"inputs":...}']
 *
 * TLS: set OPENWOP_GRPC_CA to the PEM file of the certificate authority (or the self-signed
 * certificate) the listener presents. Needs @grpc/grpc-js and @grpc/proto-loader.
 */
const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_DIR = path.join(__dirname, '..', '..', 'schemas', 'grpc');

// google.protobuf.Struct / Value <-> plain JSON: run inputs, snapshots and event payloads travel as Structs.
function toValue(v) {
  if (v === null || v === undefined) return { nullValue: 'NULL_VALUE' };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(toValue) } };
  return { structValue: toStruct(v) };
}
function toStruct(o) {
  return { fields: Object.fromEntries(Object.entries(o).map(([k, v]) => [k, toValue(v)])) };
}
function fromValue(v) {
  if (v.structValue) return fromStruct(v.structValue);
  if (v.listValue) return (v.listValue.values || []).map(fromValue);
  if ('numberValue' in v) return v.numberValue;
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  return null;
}
function fromStruct(s) {
  return Object.fromEntries(Object.entries((s && s.fields) || {}).map(([k, v]) => [k, fromValue(v)]));
}

/** The error envelope a failed call carries in its google.rpc.Status details. */
function envelopeOf(err, statusType) {
  const bin = err.metadata && err.metadata.get('grpc-status-details-bin')[0];
  if (!bin) return undefined;
  const status = statusType.decode(bin);
  const detail = status.details.find((d) => d.type_url === 'openwop.dev/spec/v1/ErrorEnvelope');
  return detail ? JSON.parse(Buffer.from(detail.value).toString('utf8')) : undefined;
}

async function main() {
  const [workflowId, extra] = process.argv.slice(2);
  if (!workflowId) {
    console.error('usage: run-workflow.js <workflowId> [\'{"inputs":{...}}\']');
    process.exit(2);
  }
  const target = process.env.OPENWOP_GRPC_TARGET || '127.0.0.1:50051';
  const key = process.env.OPENWOP_API_KEY;
  if (!key) throw new Error('set OPENWOP_API_KEY to a key holding runs:create and runs:read');

  const options = { keepCase: true, longs: String, enums: String, defaults: false, includeDirs: [PROTO_DIR] };
  const definition = protoLoader.loadSync('openwop.proto', options);
  const { openwop } = grpc.loadPackageDefinition(definition);
  const statusType = require('protobufjs').loadSync(path.join(PROTO_DIR, 'google', 'rpc', 'status.proto')).lookupType('google.rpc.Status');
  const credentials = process.env.OPENWOP_GRPC_CA ? grpc.credentials.createSsl(fs.readFileSync(process.env.OPENWOP_GRPC_CA)) : grpc.credentials.createInsecure();
  const engine = new openwop.v1.Engine(target, credentials);
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${key}`);
  const unary = (method, request) =>
    new Promise((resolve, reject) =>
      engine[method](request, md, { deadline: Date.now() + 30_000 }, (err, res) => {
        if (!err) return resolve(res);
        const envelope = envelopeOf(err, statusType);
        reject(new Error(`${method}: ${grpc.status[err.code]} ${envelope ? JSON.stringify(envelope) : err.details}`));
      }),
    );

  const caps = await unary('GetCapabilities', {});
  console.log(`host speaks OpenWOP ${caps.protocol_version}; transports ${(caps.supported_transports || []).join(', ')}; gRPC ${caps.grpc ? caps.grpc.endpoint : 'not advertised'}`);

  const body = extra ? JSON.parse(extra) : {};
  const created = await unary('CreateRun', { workflow_id: workflowId, ...(body.inputs ? { inputs: toStruct(body.inputs) } : {}) });
  console.log(`run ${created.run_id} ${created.status}`);

  await new Promise((resolve, reject) => {
    const stream = engine.StreamRunEvents({ run_id: created.run_id, last_sequence: 0 }, md);
    stream.on('data', (e) => console.log(`  #${e.sequence} ${e.type}${e.node_id ? ` ${e.node_id}` : ''} ${JSON.stringify(e.payload ? fromValue(e.payload) : null)}`));
    stream.on('error', (err) => reject(new Error(`StreamRunEvents: ${grpc.status[err.code]} ${JSON.stringify(envelopeOf(err, statusType) || err.details)}`)));
    stream.on('end', resolve);
  });

  const run = await unary('GetRun', { run_id: created.run_id });
  console.log(`run ${run.run_id} ended ${run.status}; node states ${JSON.stringify(fromStruct(run.node_states))}`);
  engine.close();
}

main().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
