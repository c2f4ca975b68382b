import Foundation
import ImageKit

// `swift run -c release bench`: ImageKit's throughput against the raw C libraries, measured in
// the same run on the same bytes. See `bench --help`.
let options = BenchOptions.parse(Array(CommandLine.arguments.dropFirst()))
let report = Report(json: options.json)
if !options.json {
    print(
        "ImageKit \(ImageKit.version) bench — \(ProcessInfo.processInfo.activeProcessorCount) cores, min-time \(options.minTime) s per case and side"
    )
}
DecodeBench(options: options, report: report).run()
ThumbnailBench(options: options, report: report).run()
ServeBench(options: options, report: report).run()
if options.corpus == nil {
    EncodeBench(options: options, report: report).run()
    await CacheBench(options: options, report: report).run()
}
if options.corpus == nil { FormatsBench(options: options, report: report).run() }
TransformBench(options: options, report: report).run()
AutoQualityBench(options: options, report: report).run()
await AnimationBench(options: options, report: report).run()
