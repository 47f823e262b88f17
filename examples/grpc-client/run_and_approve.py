#!/usr/bin/env python3
"""A Python client of the host's gRPC transport (openwop.v1.Engine), from stubs generated from
schemas/grpc/openwop.proto: finds the workflow in ListWorkflows, starts a run, follows its events, and when the run stops at an approval
gate finds it in ListRuns and ListApprovals (walking their pages), approves it, follows the run to
its end and prints what it saw as one JSON object.

Generate the stubs first (Debian: protobuf-compiler, protobuf-compiler-grpc, python3-grpcio,
python3-protobuf; or grpcio-tools with a protoc of 3.15 or later):

    mkdir -p gen
    protoc -I schemas/grpc --python_out=gen --grpc_out=gen \\
      --plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin openwop.proto google/rpc/status.proto
    # or: python3 -m grpc_tools.protoc -I schemas/grpc --python_out=gen --grpc_python_out=gen \\
    #       openwop.proto google/rpc/status.proto

Then:

    OPENWOP_GRPC_STUBS=gen OPENWOP_GRPC_TARGET=127.0.0.1:50051 OPENWOP_API_KEY=owk_... \\
      python3 examples/grpc-client/run_and_approve.py <workflowId> '{"who": "world"}'

The key needs runs:create, runs:read, approvals:respond and tools:read.
"""
import json
import os
import sys

sys.path.insert(0, os.environ.get("OPENWOP_GRPC_STUBS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen")))

import grpc  # noqa: E402
from google.protobuf import json_format, struct_pb2  # noqa: E402
from google.protobuf.descriptor import FieldDescriptor  # noqa: E402
from google.rpc import status_pb2  # noqa: E402

import openwop_pb2 as pb  # noqa: E402
import openwop_pb2_grpc as engine  # noqa: E402

JSON_TYPES = ("google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue")


def rest_json(message):
    """A message as the REST JSON body it mirrors: each field under its proto3 JSON name (the REST
    member name), Struct and Value fields as the plain JSON they carry, and the members of
    `additional_properties` back at the top level of their object. Only fields the host set are
    written (proto3 does not send a scalar at its default value)."""
    body = {}
    for field, value in message.ListFields():
        if field.name == "additional_properties":
            body.update(json_format.MessageToDict(value))
            continue
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            convert = (lambda m: json_format.MessageToDict(m)) if field.message_type.full_name in JSON_TYPES else rest_json
            value = [convert(m) for m in value] if field.label == FieldDescriptor.LABEL_REPEATED else convert(value)
        elif field.label == FieldDescriptor.LABEL_REPEATED:
            value = list(value)
        body[field.json_name] = value
    return body


def json_value(plain):
    """Plain JSON as a google.protobuf.Value (resume values, for instance)."""
    return json_format.ParseDict(plain, struct_pb2.Value())


def envelope(error):
    """The REST error envelope a failed call carries in its google.rpc.Status details."""
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                if detail.type_url == "openwop.dev/spec/v1/ErrorEnvelope":
                    return json.loads(detail.value.decode("utf-8"))
    return None


def pages(method, request, items, metadata):
    """Every item of a paged list: the next request carries the answer's next_cursor as cursor."""
    count = 0
    while True:
        answer = method(request, metadata=metadata)
        count += 1
        for item in getattr(answer, items):
            yield count, item
        if not answer.HasField("next_cursor"):
            return
        request.cursor = answer.next_cursor


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: run_and_approve.py <workflowId> ['{\"who\": \"world\"}']")
    workflow_id = sys.argv[1]
    inputs = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    target = os.environ.get("OPENWOP_GRPC_TARGET", "127.0.0.1:50051")
    key = os.environ["OPENWOP_API_KEY"]
    metadata = [("authorization", "Bearer " + key)]
    channel = grpc.insecure_channel(target)
    stub = engine.EngineStub(channel)
    report = {}

    # The workflow among those installed (ListWorkflows, page by page), with the inputs it declares.
    for page, workflow in pages(stub.ListWorkflows, pb.ListWorkflowsRequest(limit=1), "workflows", metadata):
        if workflow.workflow_id == workflow_id:
            report["workflow"] = {"page": page, "name": workflow.name, "parameters": json_format.MessageToDict(workflow.parameters)}

    request = pb.CreateRunRequest(workflow_id=workflow_id)
    request.inputs.update(inputs)  # run inputs are a Struct: any JSON object
    created = stub.CreateRun(request, metadata=metadata)
    report["created"] = rest_json(created)
    run_id = created.run_id

    events = []
    for event in stub.StreamRunEvents(pb.StreamRunEventsRequest(run_id=run_id), metadata=metadata):
        events.append({"sequence": event.sequence, "type": event.type, "nodeId": event.node_id})
        if event.type != "node.suspended" or "approved" in report:
            continue
        # The run waits at a gate: every waiting run, one per page (newest first), and every pending gate.
        report["waitingRuns"] = []
        for page, run in pages(stub.ListRuns, pb.ListRunsRequest(status="waiting-approval", limit=1), "runs", metadata):
            report["waitingRuns"].append({"page": page, "runId": run.run_id})
            if run.run_id == run_id:
                report["listedRun"] = {"status": run.status, "inputs": json_format.MessageToDict(run.variables).get("inputs")}
        report["pendingGates"] = []
        for page, gate in pages(stub.ListApprovals, pb.ListApprovalsRequest(state="pending", limit=1), "approvals", metadata):
            gate = json_format.MessageToDict(gate)
            report["pendingGates"].append({"page": page, "runId": gate.get("runId")})
            if gate.get("runId") == run_id:
                report["listedApproval"] = {"title": gate["title"], "nodeId": gate["nodeId"], "state": gate["state"]}
        answer = stub.ResolveInterruptByRun(
            pb.ResolveInterruptByRunRequest(run_id=run_id, node_id=event.node_id, resume_value=json_value({"action": "accept"})),
            metadata=metadata,
        )
        report["approved"] = rest_json(answer)
    report["events"] = events

    final = stub.GetRun(pb.GetRunRequest(run_id=run_id), metadata=metadata)
    report["run"] = rest_json(final)
    # Run inputs and outputs: variables.inputs (a typed Struct field), outputs in additional_properties.
    report["inputs"] = json_format.MessageToDict(final.variables).get("inputs")
    report["outputs"] = json_format.MessageToDict(final.additional_properties).get("outputs")
    report["tools"] = [json_format.MessageToDict(t)["toolId"] for t in stub.ListTools(pb.ListToolsRequest(), metadata=metadata).tools]

    try:
        stub.GetRun(pb.GetRunRequest(run_id="00000000-0000-4000-8000-000000000000"), metadata=metadata)
    except grpc.RpcError as error:
        report["missingRun"] = {"code": error.code().name, "envelope": envelope(error)}

    channel.close()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
