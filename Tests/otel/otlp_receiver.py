#!/usr/bin/env python3
"""A small OTLP/HTTP trace receiver for the tracing tests: listens on 127.0.0.1 (port 0), decodes
each POST /v1/traces body (protobuf, gzip or not) with PyPI's opentelemetry-proto, and appends one
JSON object per span to OUTPUT:

    {"trace_id", "span_id", "parent_span_id" (hex, "" for a root), "name", "kind" (SERVER, CLIENT,
     INTERNAL …), "service": the resource's service.name, "attributes": {key: value}, "error": bool}

It prints `listening PORT` once bound, answers 200 with an empty ExportTraceServiceResponse, and
runs until killed.

    python3 otlp_receiver.py OUTPUT.jsonl
"""
import gzip
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

OUTPUT = sys.argv[1]


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding", "") == "gzip":
            body = gzip.decompress(body)
        if self.path != "/v1/traces":
            self.send_response(404)
            self.end_headers()
            return
        request = ExportTraceServiceRequest.FromString(body)
        lines = []
        for resource_spans in request.resource_spans:
            resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    lines.append(json.dumps({
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": Span.SpanKind.Name(span.kind).replace("SPAN_KIND_", ""),
                        "service": resource.get("service.name"),
                        "attributes": {a.key: value(a.value) for a in span.attributes},
                        "error": span.status.code == Status.STATUS_CODE_ERROR,
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                    }))
        with open(OUTPUT, "a") as output:
            output.write("".join(line + "\n" for line in lines))
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
print("listening", server.server_address[1], flush=True)
server.serve_forever()
