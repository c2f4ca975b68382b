import Crypto
import Foundation

/// thumbor's URL signature: `base64url(HMAC-SHA1(key, path))` with its `=` padding kept
/// (28 characters), over the path after the signature without its leading `/`.
///
/// Several keys may be valid at once, so a key can be rotated without breaking the URLs
/// already out: sign with the first, accept any.
///
/// ```swift
/// let signer = ThumborSigner(keys: ["my-key"])
/// let path = "300x200/smart/example.com/cat.jpg"
/// let url = "/" + signer.sign(path) + "/" + path
/// ```
public struct ThumborSigner: Sendable {
    /// Key bytes (`SymmetricKey` is not Sendable; one is made per use).
    private let keys: [Data]

    /// `keys`: thumbor `SECURITY_KEY` strings (their UTF-8 bytes are the HMAC keys).
    public init(keys: [String]) {
        self.keys = keys.map { Data($0.utf8) }
    }

    /// The signature of `path` with the first key.
    public func sign(_ path: String) -> String {
        guard let key = keys.first else { return "" }
        return Base64URL.encode(
            Data(HMAC<Insecure.SHA1>.authenticationCode(for: Data(path.utf8), using: SymmetricKey(data: key))),
            padded: true)
    }

    /// Whether `signature` (percent-decoded: `%3D` is `=`) signs `path` with any key, compared
    /// in constant time.
    public func isValid(_ signature: String, for path: String) -> Bool {
        guard let mac = Base64URL.decode(signature), mac.count == Insecure.SHA1.byteCount else { return false }
        let message = Data(path.utf8)
        var valid = false
        for key in keys {
            // Every key is checked, so the time does not tell which one matched.
            valid =
                HMAC<Insecure.SHA1>.isValidAuthenticationCode(
                    mac, authenticating: message, using: SymmetricKey(data: key)) || valid
        }
        return valid
    }
}

/// imgproxy's URL signature: `base64url-no-padding(HMAC-SHA256(key, salt ‖ path))` (43
/// characters), over the path after the signature with its leading `/`.
///
/// ```swift
/// let signer = try ImgproxySigner(pairs: [(key: "943b…", salt: "520f…")])
/// let path = "/rs:fill:300:300/plain/https://example.com/cat.jpg"
/// let url = "/" + signer.sign(path) + path
/// ```
public struct ImgproxySigner: Sendable {
    private let pairs: [(key: Data, salt: Data)]

    /// `pairs`: hex-encoded keys and salts (imgproxy's `IMGPROXY_KEY` and `IMGPROXY_SALT`);
    /// several for key rotation. Throws on text that is not hex.
    public init(pairs: [(key: String, salt: String)]) throws(ImageServiceError) {
        var decoded: [(Data, Data)] = []
        for pair in pairs {
            guard let key = Hex.decode(pair.key), let salt = Hex.decode(pair.salt), !key.isEmpty else {
                throw ImageServiceError(.invalidKey, "the imgproxy key and salt must be hex")
            }
            decoded.append((key, salt))
        }
        self.pairs = decoded
    }

    /// The signature of `path` (with its leading `/`) with the first key pair.
    public func sign(_ path: String) -> String {
        guard let (key, salt) = pairs.first else { return "" }
        return Base64URL.encode(
            Data(HMAC<SHA256>.authenticationCode(for: salt + Data(path.utf8), using: SymmetricKey(data: key))),
            padded: false)
    }

    /// Whether `signature` signs `path` with any key pair, compared in constant time.
    public func isValid(_ signature: String, for path: String) -> Bool {
        guard let mac = Base64URL.decode(signature), mac.count == SHA256.byteCount else { return false }
        var valid = false
        for (key, salt) in pairs {
            valid =
                HMAC<SHA256>.isValidAuthenticationCode(
                    mac, authenticating: salt + Data(path.utf8), using: SymmetricKey(data: key)) || valid
        }
        return valid
    }
}

/// URL-safe Base64 (RFC 4648 §5).
enum Base64URL {
    static func encode(_ data: Data, padded: Bool) -> String {
        var text = data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(
            of: "/", with: "_")
        if !padded { while text.hasSuffix("=") { text.removeLast() } }
        return text
    }

    /// Decodes with or without padding; also accepts the standard alphabet. nil for anything else.
    static func decode(_ text: String) -> Data? {
        guard
            text.utf8.allSatisfy({ byte in
                (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                    || byte == 0x2D || byte == 0x5F || byte == 0x2B || byte == 0x2F || byte == 0x3D
            })
        else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard = standard.trimmingCharacters(in: CharacterSet(charactersIn: "="))
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard)
    }
}

extension Sequence<UInt8> {
    /// Lower-case hex, two digits a byte.
    var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

enum Hex {
    static func decode(_ text: String) -> Data? {
        let bytes = Array(text.utf8)
        guard bytes.count % 2 == 0 else { return nil }
        func nibble(_ byte: UInt8) -> UInt8? {
            switch byte {
            case 0x30...0x39: return byte - 0x30
            case 0x61...0x66: return byte - 0x61 + 10
            case 0x41...0x46: return byte - 0x41 + 10
            default: return nil
            }
        }
        var data = Data(capacity: bytes.count / 2)
        var index = 0
        while index < bytes.count {
            guard let high = nibble(bytes[index]), let low = nibble(bytes[index + 1]) else { return nil }
            data.append(high << 4 | low)
            index += 2
        }
        return data
    }
}
