import Foundation

/// `bench [--corpus DIR] [--filter SUBSTRING] [--min-time S] [--json] [--sizes small|all]`
struct BenchOptions {
    var corpus: String?
    var filter: String?
    var minTime = 0.5
    var json = false
    var quick = false
    /// Photos for the transform rows instead of the generated 12 MP and 1 MP ones.
    var transformSources: [String] = []
    /// The autoquality rows print each format's mean score by quality instead.
    var qualityCurves = false
    /// The qualities' step in those curves.
    var qualityStep = 5

    static let usage = """
        usage: bench [--corpus DIR] [--filter SUBSTRING] [--min-time SECONDS] [--quick] [--json]

          --corpus DIR        decode every image file under DIR (one case per file: decode/<name>)
                              instead of the generated corpus
          --filter SUBSTRING  run only the cases whose name contains SUBSTRING (or one of a,b,c)
          --min-time SECONDS  time spent per case and side (default 0.5; at least 5 runs each)
          --quick             generated corpus without the 4000x3000 images
          --transform-source FILE
                              run the transform/ and autoquality/ rows on FILE (repeatable)
                              instead of generated photos
          --quality-curves    the autoquality/ rows print each format's mean SSIMULACRA2 by
                              quality over the photos instead of timing the search
          --quality-step N    the qualities' step in those curves (default 5, from 10)
          --json              one JSON object per row instead of tables
        """

    static func parse(_ arguments: [String]) -> BenchOptions {
        var options = BenchOptions()
        var iterator = arguments.makeIterator()
        func value(_ flag: String) -> String {
            guard let value = iterator.next() else { fail("\(flag) needs a value") }
            return value
        }
        while let argument = iterator.next() {
            switch argument {
            case "--corpus": options.corpus = value(argument)
            case "--filter": options.filter = value(argument)
            case "--min-time":
                guard let seconds = Double(value(argument)), seconds > 0 else {
                    fail("--min-time needs a positive number")
                }
                options.minTime = seconds
            case "--json": options.json = true
            case "--quick": options.quick = true
            case "--transform-source": options.transformSources.append(value(argument))
            case "--quality-curves": options.qualityCurves = true
            case "--quality-step":
                guard let step = Int(value(argument)), step > 0 else { fail("--quality-step needs a positive integer") }
                options.qualityStep = step
            case "-h", "--help": print(usage); exit(0)
            default: fail("unknown argument \(argument)")
            }
        }
        return options
    }

    func includes(_ name: String) -> Bool {
        guard let filter else { return true }
        return filter.split(separator: ",").contains { name.contains($0) }
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("bench: \(message)\n\(BenchOptions.usage)\n".utf8))
    exit(2)
}

func log(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
