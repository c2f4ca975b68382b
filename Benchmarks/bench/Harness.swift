import Foundation

/// Monotonic seconds.
func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// Times two competitors on the same work in alternating runs, so drift on a shared machine
/// hits both alike. Each run repeats its body enough times to last about `runTime` seconds;
/// the result is each side's median over at least `minRuns` runs of work-per-second.
struct PairedMeasurement {
    var minRuns = 5
    var minTime = 0.5

    /// - Returns: (a, b) medians of `work / seconds`, for example megapixels per second.
    func run(work: Double, _ a: () -> Void, _ b: () -> Void) -> (Double, Double) {
        // One untimed warm-up each, which also sizes the runs.
        let startA = now(); a(); let warmA = now() - startA
        let startB = now(); b(); let warmB = now() - startB
        let runTime = minTime / Double(minRuns)
        let repeatsA = max(1, Int(runTime / max(warmA, 1e-7)))
        let repeatsB = max(1, Int(runTime / max(warmB, 1e-7)))
        var ratesA: [Double] = [], ratesB: [Double] = []
        let begin = now()
        while ratesA.count < minRuns || now() - begin < minTime * 2 {
            ratesA.append(timed(repeatsA, a, work: work))
            ratesB.append(timed(repeatsB, b, work: work))
            if ratesA.count >= 200 { break }
        }
        return (median(ratesA), median(ratesB))
    }

    /// Median of one side alone.
    func run(work: Double, _ body: () -> Void) -> Double {
        let start = now(); body(); let warm = now() - start
        let repeats = max(1, Int(minTime / Double(minRuns) / max(warm, 1e-7)))
        var rates: [Double] = []
        let begin = now()
        while rates.count < minRuns || now() - begin < minTime {
            rates.append(timed(repeats, body, work: work))
            if rates.count >= 200 { break }
        }
        return median(rates)
    }

    private func timed(_ repeats: Int, _ body: () -> Void, work: Double) -> Double {
        let start = now()
        for _ in 0..<repeats { body() }
        return work * Double(repeats) / (now() - start)
    }
}

/// A printed table or JSON lines.
struct Report {
    var json: Bool

    func table(_ title: String, header: [String], rows: [[String]]) {
        guard !json, !rows.isEmpty else { return }
        print("\n" + title)
        var widths = header.map(\.count)
        for row in rows { for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                index == 0
                    ? cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[index] - cell.count) + cell
            }.joined(separator: "  ")
        }
        print(line(header))
        print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
        for row in rows { print(line(row)) }
    }

    func jsonLine(_ object: [String: Any]) {
        guard json, let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            return
        }
        print(String(decoding: data, as: UTF8.self))
    }
}

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
