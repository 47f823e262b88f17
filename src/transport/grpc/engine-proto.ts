import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as protoLoader from '@grpc/proto-loader';
import type { Root } from 'protobufjs';
import { PROJECT_ROOT } from '../../platform/project-root';
import { ProtoJsonCodec } from './json-struct';

/** The folder holding openwop.proto and the google/rpc protos it imports (its include path). */
export const ENGINE_PROTO_DIR = path.join(PROJECT_ROOT, 'schemas', 'grpc');
export const ENGINE_PROTO_FILE = 'openwop.proto';
/** google.rpc.Status, the message an error travels in; openwop.proto does not import it (no message refers to it), so it is loaded beside. */
export const STATUS_PROTO_FILE = 'google/rpc/status.proto';
export const ENGINE_PACKAGE = 'openwop.v1';
export const ENGINE_SERVICE = `${ENGINE_PACKAGE}.Engine`;

/**
 * How the host loads the proto: field names as written (snake_case; the JSON codec maps them),
 * 64-bit integers as decimal strings (never silently rounded), enums by name, and only the fields
 * the peer sent (`defaults: false`), so presence survives into the JSON form.
 */
export const ENGINE_PROTO_LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: false,
  includeDirs: [ENGINE_PROTO_DIR],
};

/** Loads @grpc/proto-loader (and protobufjs) on first use: only a host that serves gRPC reads the proto. */
export function loadEnginePackageDefinition(): protoLoader.PackageDefinition {
  return (require('@grpc/proto-loader') as typeof protoLoader).loadSync([ENGINE_PROTO_FILE, STATUS_PROTO_FILE], ENGINE_PROTO_LOADER_OPTIONS);
}

/**
 * The same proto as protobufjs reflection types, for the JSON codec. Imports resolve like
 * proto-loader's include path; the google/protobuf well-known types come bundled with protobufjs.
 */
export function loadEngineRoot(): Root {
  const { Root } = require('protobufjs') as typeof import('protobufjs');
  const root = new Root();
  const bundled = root.resolvePath.bind(root);
  root.resolvePath = (origin, target) => {
    if (path.isAbsolute(target)) return target;
    const candidate = path.join(ENGINE_PROTO_DIR, target);
    return fs.existsSync(candidate) ? candidate : bundled(origin, target);
  };
  root.loadSync([path.join(ENGINE_PROTO_DIR, ENGINE_PROTO_FILE), path.join(ENGINE_PROTO_DIR, STATUS_PROTO_FILE)], { keepCase: true });
  root.resolveAll();
  return root;
}

/**
 * The members each REST body requires (its JSON Schema's `required`, and the path and query
 * parameters an operation cannot do without), by proto field name. proto3 cannot tell an absent
 * scalar or list from its default; the codec writes these at their default, as REST always has them.
 */
export const ENGINE_REQUIRED_FIELDS: Readonly<Record<string, readonly string[]>> = {
  'openwop.v1.ErrorEnvelope': ['error', 'message'],
  'openwop.v1.GetCapabilitiesResponse': ['protocol_version', 'supported_envelopes', 'schema_versions', 'limits'],
  'openwop.v1.GrpcTransportAdvertisement': ['supported', 'service', 'tls'],
  'openwop.v1.GetWorkflowRequest': ['workflow_id'],
  'openwop.v1.GetWorkflowResponse': ['id', 'name', 'version', 'nodes', 'edges', 'triggers', 'variables', 'metadata', 'settings'],
  'openwop.v1.CreateRunResponse': ['run_id', 'status', 'events_url'],
  'openwop.v1.GetRunRequest': ['run_id'],
  'openwop.v1.GetRunResponse': ['run_id', 'workflow_id', 'status'],
  'openwop.v1.RunOwner': ['tenant'],
  'openwop.v1.RunError': ['code', 'message'],
  'openwop.v1.CancelRunRequest': ['run_id'],
  'openwop.v1.BulkCancelRunsRequest': ['run_ids'],
  'openwop.v1.BulkCancelRunsResponse': ['results'],
  'openwop.v1.BulkCancelRunResult': ['run_id', 'ok'],
  'openwop.v1.ForkRunRequest': ['run_id', 'mode'],
  'openwop.v1.ForkRunResponse': ['run_id', 'source_run_id', 'mode', 'status', 'events_url'],
  'openwop.v1.PauseRunRequest': ['run_id'],
  'openwop.v1.PauseRunResponse': ['run_id', 'status'],
  'openwop.v1.ResumeRunRequest': ['run_id'],
  'openwop.v1.ResumeRunResponse': ['run_id', 'status'],
  'openwop.v1.StreamRunEventsRequest': ['run_id'],
  'openwop.v1.RunEventEnvelope': ['event_id', 'run_id', 'type', 'payload', 'timestamp', 'sequence'],
  'openwop.v1.ResolveInterruptByRunRequest': ['run_id', 'node_id', 'resume_value'],
  'openwop.v1.ResolveInterruptByTokenRequest': ['token', 'resume_value'],
  'openwop.v1.InspectInterruptByTokenRequest': ['token'],
  'openwop.v1.InspectInterruptResponse': ['kind', 'key', 'data'],
  'openwop.v1.GetArtifactRequest': ['run_id', 'artifact_id'],
  'openwop.v1.RegisterWebhookRequest': ['url', 'events'],
  'openwop.v1.RegisterWebhookResponse': ['webhook_id'],
  'openwop.v1.UnregisterWebhookRequest': ['webhook_id'],
  'openwop.v1.VerifyAuditLogRequest': ['from_seq', 'to_seq'],
  'openwop.v1.VerifyAuditLogResponse': ['from_seq', 'to_seq', 'chain_valid', 'checkpoints', 'anomalies'],
  'openwop.v1.AuditCheckpoint': ['checkpoint', 'at_sequence', 'merkle_root', 'signature'],
  'openwop.v1.AuditAnomaly': ['at_seq', 'expected_prev_hash', 'actual_prev_hash'],
  // The lists: the items always; next_cursor is absent on the last page (REST's null).
  'openwop.v1.ListRunsResponse': ['runs'],
  'openwop.v1.ListToolsResponse': ['tools'],
  'openwop.v1.ListApprovalsResponse': ['approvals'],
  'openwop.v1.ListWorkflowsResponse': ['workflows'],
  'openwop.v1.WorkflowSummary': ['workflow_id', 'name'],
};

let codec: ProtoJsonCodec | undefined;

/** The JSON codec for openwop.v1 messages (built once; the proto does not change while running). */
export function engineJsonCodec(): ProtoJsonCodec {
  return (codec ??= new ProtoJsonCodec(loadEngineRoot(), { required: ENGINE_REQUIRED_FIELDS }));
}
