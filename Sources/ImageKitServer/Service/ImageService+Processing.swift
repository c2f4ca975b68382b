import Foundation
import ImageKit
import Tracing

// Processing: one joined job per result on the bounded worker pool, its place taken before the
// source is fetched.
extension ImageService {
    /// Takes a place in the worker pool for the work of `resultKey` before its source is
    /// fetched: when every place is taken the request is answered 503 without asking the origin
    /// for bytes it would not process (imgproxy's queue comes before its download too). A request
    /// whose result is already wanted takes no place of its own: it joins that work, and
    /// whichever of them starts the work runs it in the place. Pair with ``releasePlace(for:)``.
    func claimPlace(for resultKey: String) throws(ImageServiceError) {
        let pool = self.pool
        try resultsInFlight.withLock { entries throws(ImageServiceError) in
            if let entry = entries[resultKey] {
                entries[resultKey]?.requests = entry.requests + 1
                return
            }
            guard let place = pool.reserve() else { throw ImageServiceError(.busy, "the service is busy; try again") }
            entries[resultKey] = (1, place)
        }
    }

    /// The request for `resultKey` is answered; the last one out gives an unused place back.
    func releasePlace(for resultKey: String) {
        let unused = resultsInFlight.withLock { entries -> WorkerPool.Reservation? in
            guard let entry = entries[resultKey] else { return nil }
            if entry.requests > 1 {
                entries[resultKey]?.requests = entry.requests - 1
                return nil
            }
            entries[resultKey] = nil
            return entry.place
        }
        unused?.release()
    }

    /// The processing of one result: joined with identical requests in flight, run on the pool
    /// (in the place claimed for `placeKey`, when there is one).
    func process(
        _ source: Data, signature: ImageSignature, request: ImageRequest, watermarks: [String: Data] = [:],
        key: String, placeKey: String? = nil
    ) async throws(ImageServiceError) -> ProcessedImage {
        let processor = self.processor
        let pool = self.pool
        let resultsInFlight = self.resultsInFlight
        let task = inFlight.withLock { tasks -> Task<Result<ProcessedImage, ImageServiceError>, Never> in
            if let running = tasks[key] { return running }
            let reservation = placeKey.flatMap { placeKey in
                resultsInFlight.withLock { entries -> WorkerPool.Reservation? in
                    defer { entries[placeKey]?.place = nil }
                    return entries[placeKey]?.place
                }
            }
            let task = Task<Result<ProcessedImage, ImageServiceError>, Never> {
                // The pool's threads do not carry the task's trace: it is handed over.
                let trace = ServiceContext.current
                let outcome = await pool.run(reservation: reservation) {
                    () -> Result<ProcessedImage, ImageServiceError> in
                    do throws(ImageServiceError) {
                        return .success(
                            try processor.process(
                                source, request: request, watermarks: watermarks, signature: signature,
                                serviceContext: trace))
                    } catch {
                        return .failure(error)
                    }
                }
                return outcome ?? .failure(ImageServiceError(.busy, "the service is busy; try again"))
            }
            tasks[key] = task
            return task
        }
        let outcome = await task.value
        inFlight.withLock { tasks in
            if tasks[key] == task { tasks[key] = nil }
        }
        let processed = try outcome.get()
        metrics.processed(processed.timings)
        return processed
    }

    /// Runs `body` on the worker pool, in `reservation`'s place or a free one (503 when there is none).
    func runOnPool<Output: Sendable>(
        reservation: WorkerPool.Reservation? = nil, _ body: @escaping @Sendable () throws(ImageServiceError) -> Output
    ) async throws(ImageServiceError) -> Output {
        let outcome = await pool.run(reservation: reservation) { () -> Result<Output, ImageServiceError> in
            do throws(ImageServiceError) { return .success(try body()) } catch { return .failure(error) }
        }
        guard let outcome else { throw ImageServiceError(.busy, "the service is busy; try again") }
        return try outcome.get()
    }
}
