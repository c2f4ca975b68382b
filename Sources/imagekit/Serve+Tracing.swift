#if Serve
import ArgumentParser
import Logging
#if OTel
import OTel
#endif
import ServiceLifecycle

extension Serve {
    /// The OTLP/HTTP trace exporter, bootstrapped as the process's tracer, when `--otel-endpoint`
    /// or `OTEL_EXPORTER_OTLP_ENDPOINT` names a collector; nil (no tracer: spans cost nothing)
    /// otherwise. Traces only: metrics stay on `/metrics` and logs on standard output. The other
    /// `OTEL_*` variables (`OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER` …) apply as the
    /// OpenTelemetry specification says. A build without the `OTel` trait refuses an endpoint.
    func traceExporter(environment: [String: String]) throws -> (any Service)? {
        let fromEnvironment = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].contains {
            !(environment[$0] ?? "").isEmpty
        }
        guard otelEndpoint != nil || fromEnvironment else { return nil }
        #if OTel
        var configuration = OTel.Configuration.default
        configuration.serviceName = "imagekit"
        configuration.diagnosticLogger = .custom(Logger(label: "imagekit.otel"))
        configuration.metrics.enabled = false
        configuration.logs.enabled = false
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        if let otelEndpoint {
            // A base URL, as OTEL_EXPORTER_OTLP_ENDPOINT is one: the traces' path is added.
            let base = otelEndpoint.hasSuffix("/") ? String(otelEndpoint.dropLast()) : otelEndpoint
            configuration.traces.otlpExporter.endpoint = base + "/v1/traces"
        }
        var environment = environment
        if otelEndpoint != nil {  // the command line wins, as it does over IMAGEKIT_SERVE_*
            environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = nil
            environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = nil
        }
        do {
            return try OTel.bootstrap(configuration: configuration, environment: environment)
        } catch {
            throw ValidationError("--otel-endpoint: cannot start the trace exporter: \(error)")
        }
        #else
        throw ValidationError("traces: this imagekit was built without the OTel trait (no trace exporter)")
        #endif
    }
}
#endif
