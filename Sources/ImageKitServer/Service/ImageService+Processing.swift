import Foundation
import ImageKit

// Processing: one joined job per result on the bounded worker pool.
extension ImageService {
    /// The processing of one result: joined with identical requests in flight, run on the pool.
    func process(
        _ source: Data, signature: ImageSignature, request: ImageRequest, watermarks: [String: Data] = [:],
        key: String
    ) async throws(ImageServiceError) -> ProcessedImage {
        let processor = self.processor
        let pool = self.pool
        let task = inFlight.withLock { tasks -> Task<Result<ProcessedImage, ImageServiceError>, Never> in
            if let running = tasks[key] { return running }
            let task = Task<Result<ProcessedImage, ImageServiceError>, Never> {
                let outcome = await pool.run { () -> Result<ProcessedImage, ImageServiceError> in
                    do throws(ImageServiceError) {
                        return .success(
                            try processor.process(
                                source, request: request, watermarks: watermarks, signature: signature))
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

    /// Runs `body` on the worker pool (503 when it is full).
    func runOnPool<Output: Sendable>(_ body: @escaping @Sendable () throws(ImageServiceError) -> Output)
        async throws(ImageServiceError) -> Output
    {
        let outcome = await pool.run { () -> Result<Output, ImageServiceError> in
            do throws(ImageServiceError) { return .success(try body()) } catch { return .failure(error) }
        }
        guard let outcome else { throw ImageServiceError(.busy, "the service is busy; try again") }
        return try outcome.get()
    }
}
