import Foundation

/// The client hints a browser sends once a response asked for them (`Accept-CH`): its device
/// pixel ratio, the image's width in device pixels, and the viewport's width in CSS pixels.
/// Each is read from its `Sec-CH-` header, else the legacy one (`DPR`, `Width`, `Viewport-Width`).
///
/// ```swift
/// let hints = ClientHints { name in ["Sec-CH-DPR": "2", "Sec-CH-Width": "640"][name] }
/// print(hints.dpr, hints.width)   // Optional(2.0) Optional(640)
/// ```
public struct ClientHints: Sendable, Hashable {
    /// Device pixels per CSS pixel, 0 < dpr ≤ 8 (others are ignored).
    public var dpr: Double?
    /// The image's intended width in device pixels.
    public var width: Int?
    /// The viewport's width in CSS pixels.
    public var viewportWidth: Int?

    /// The request headers hints are read from, as `Vary` names them.
    public static let headerNames = [
        "Sec-CH-DPR", "DPR", "Sec-CH-Width", "Width", "Sec-CH-Viewport-Width", "Viewport-Width",
    ]
    /// What a response asks browsers to send (`Accept-CH`).
    public static let acceptCH = "Sec-CH-DPR, Sec-CH-Width, Sec-CH-Viewport-Width"

    /// The hints among the headers `field` returns by name (nil: absent).
    public init(_ field: (String) -> String?) {
        func value(_ modern: String, _ legacy: String) -> Double? {
            guard let text = field(modern) ?? field(legacy),
                let number = Double(text.trimmingCharacters(in: .whitespaces)), number.isFinite, number > 0
            else { return nil }
            return number
        }
        dpr = value("Sec-CH-DPR", "DPR").flatMap { $0 <= 8 ? $0 : nil }
        width = value("Sec-CH-Width", "Width").flatMap { $0 <= 16_384 ? Int($0.rounded()) : nil }
        viewportWidth = value("Sec-CH-Viewport-Width", "Viewport-Width").flatMap {
            $0 <= 16_384 ? Int($0.rounded()) : nil
        }
    }

    /// Whether any hint was sent.
    public var isEmpty: Bool { dpr == nil && width == nil && viewportWidth == nil }
}

extension ImageRequest {
    /// Whether this request's grammar reads client hints: imgproxy's (its
    /// `IMGPROXY_ENABLE_CLIENT_HINTS`); thumbor's has no place for them.
    public var readsClientHints: Bool { grammar == .imgproxy }

    /// The request with `hints` as its defaults, as imgproxy applies them: the DPR when the URL
    /// sets none; the width, when the URL asks none, from `Width` (device pixels, so divided by
    /// the DPR, which multiplies it back) or else the viewport's width (CSS pixels). Unchanged for
    /// a grammar without client hints.
    public func applying(_ hints: ClientHints) -> ImageRequest {
        guard readsClientHints, !hints.isEmpty else { return self }
        var request = self
        if request.operations.dpr == 1, let dpr = hints.dpr { request.operations.dpr = dpr }
        if request.operations.width == 0 && !request.operations.widthIsOriginal {
            if let width = hints.width {
                request.operations.width = max(1, Int((Double(width) / request.operations.dpr).rounded()))
            } else if let viewport = hints.viewportWidth {
                request.operations.width = viewport
            }
        }
        return request
    }
}
