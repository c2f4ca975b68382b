import Foundation

// Decoding and transforming bytes into what a job delivers, and variants made from a cached original.
extension ImageManager {
    /// What a decode (and transform) made of some bytes.
    struct Produced: Sendable {
        /// The decode, before any transformer (nil with `.avoidDecodeImage`).
        var decoded: DecodedImage?
        /// What the caller gets: the transformed image, or the decode.
        var delivered: DecodedImage?
        var wasTransformed: Bool
        /// The bytes' format, sniffed once here for the whole load: the decode, the store's
        /// whole-image check and the result's format all read it (nil without bytes).
        var signature: ImageSignature?
        var queueWait: TimeInterval?
        var decodeDuration: TimeInterval?
        var transformDuration: TimeInterval?
    }

    // Spec: TRK-04.
    /// Decodes `data` with the plan's options (unless `image` is given), then transforms
    /// (finished images only; animated ones only with `.transformAnimatedImage`).
    static func produce(
        from data: Data?, plan: ImageLoadPlan, image: DecodedImage?,
        decoding: ImageDecodingOptions? = nil
    ) throws(StagedError) -> Produced {
        let signature = data.map { ImageSignature($0) }
        if plan.options.contains(.avoidDecodeImage) && image == nil {
            return Produced(decoded: nil, delivered: nil, wasTransformed: false, signature: signature)
        }
        let decoded: DecodedImage
        let decodeStarted = now()
        var decodeDuration: TimeInterval?
        do throws(ImageError) {
            if let image {
                decoded = image
            } else if let data, let signature {
                decoded = try plan.coders.decode(data, signature: signature, options: decoding ?? plan.decoding)
                decodeDuration = now() - decodeStarted
            } else {
                throw ImageError(.emptyData, "there are no bytes to decode")
            }
        } catch {
            throw StagedError(error: error, stage: .decode)
        }
        guard let transformer = plan.transformer, !decoded.isAnimated || plan.options.contains(.transformAnimatedImage),
            !decoded.isPartial
        else {
            return Produced(
                decoded: decoded, delivered: decoded, wasTransformed: false, signature: signature,
                decodeDuration: decodeDuration)
        }
        do throws(ImageError) {
            let transformStarted = now()
            let transformed = try transformer.transform(decoded)
            return Produced(
                decoded: decoded, delivered: transformed, wasTransformed: true, signature: signature,
                decodeDuration: decodeDuration,
                transformDuration: now() - transformStarted)
        } catch {
            throw StagedError(error: error, stage: .transform)
        }
    }

    /// A failure with the stage it happened in (for the failed-URL rule).
    struct StagedError: Error, Sendable {
        var error: ImageError
        var stage: FailureStage
    }

    // Spec: MGR-10.
    /// A variant (transformer, thumbnail, decode setting) that missed is made from the
    /// original's cached bytes (or, for a transformer alone, its decoded image in memory). nil
    /// when the original is not cached or its bytes do not decode: the loader is asked then.
    func variantFromOriginal(_ job: ImageLoadJob) async -> ImageLoadResult? {
        let plan = job.plan
        let original: ImageCacheQueryResult
        do {
            original = try await plan.cache.query(
                plan.key.original, cacheType: plan.context.originalQueryCacheType,
                options: [.avoidDecodeImage, .skipMemoryPromotion, .queryMemoryData],
                decoding: .default)
        } catch {
            return nil
        }
        // A decoded original serves only when the variant adds nothing but a transformer.
        let usable =
            plan.key.thumbnail == nil && plan.key.decodeVariant == nil
                && !plan.options.contains(.decodeFirstFrameOnly) ? original.image : nil
        guard usable != nil || original.data != nil, !Task.isCancelled else { return nil }
        let produced: Produced
        do {
            let queued = Self.now()
            produced = try await decodeQueue.run { () throws(ImageError) -> Produced in
                let dequeued = Self.now()
                do throws(StagedError) {
                    var produced = try Self.produce(from: original.data, plan: plan, image: usable)
                    produced.queueWait = dequeued - queued
                    return produced
                } catch {
                    throw error.error
                }
            }
        } catch {
            return nil
        }
        if Task.isCancelled { return nil }
        record(produced)
        let storing = Self.now()
        let storeError = await storeVariant(
            produced, originalData: original.data, http: original.metadata?.http, plan: plan)
        var result = ImageLoadResult(
            image: produced.delivered, data: original.data,
            cacheType: original.cacheType == .memory ? .memory : .disk, url: plan.url, cacheKey: plan.key,
            format: produced.signature?.format)
        result.httpHeaders = original.metadata?.http
        result.storeError = storeError
        result.timings.queueWait = produced.queueWait
        result.timings.decode = produced.decodeDuration
        result.timings.transform = produced.transformDuration
        result.timings.store = Self.now() - storing
        return result
    }
}
