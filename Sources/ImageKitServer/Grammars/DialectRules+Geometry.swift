import Foundation

extension GeometryPlan {
    /// The plan for a source of the given size under the request's operations and their rules.
    ///
    /// - Parameters:
    ///   - sourceWidth: the source's width after orientation.
    ///   - sourceHeight: the source's height after orientation.
    ///   - sourceIsGIF: a GIF source; under rules that skip the filters on a GIF (thumbor runs none
    ///     of those after the resize — upscale, fill, proportion, rotate, blur … — unless a
    ///     gifsicle engine is configured), the plan skips them too, so sizes stay equal.
    ///   - sourceIsVector: an SVG or PDF source: it grows to the box without `enlarge` when the
    ///     rules say so (imgproxy's).
    ///   - request: the parsed operations.
    public init(
        sourceWidth: Int, sourceHeight: Int, sourceIsGIF: Bool = false, sourceIsVector: Bool = false,
        request: ImageRequest
    ) {
        let operations = request.operations
        self = operations.rules.geometry.plan(
            width: sourceWidth, height: sourceHeight, skipsFilters: sourceIsGIF && operations.rules.skipsFiltersOnGIF,
            growsVector: sourceIsVector && operations.rules.enlargesVectors, operations: operations)
    }
}

extension ImageOperations.DialectRules.Geometry {
    /// The plan for a source of `width` × `height` under this dialect's size arithmetic.
    ///
    /// - Parameters:
    ///   - skipsFilters: no filter after the resize changes the size (thumbor's GIFs).
    ///   - growsVector: the source is a vector that grows to the box without `enlarge`.
    func plan(width: Int, height: Int, skipsFilters: Bool, growsVector: Bool, operations: ImageOperations)
        -> GeometryPlan
    {
        switch self {
        case .thumbor:
            ThumborGeometry.plan(width: width, height: height, skipsFilters: skipsFilters, operations: operations)
        case .imgproxy:
            ImgproxyGeometry.plan(width: width, height: height, growsVector: growsVector, operations: operations)
        }
    }
}
