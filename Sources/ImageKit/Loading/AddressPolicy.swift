import Foundation

/// Which network addresses a downloader may connect to: the guard against server-side request
/// forgery for user-supplied URLs.
///
/// The check runs on the address curl is about to connect to, after DNS and on every redirect
/// hop, so a public name that resolves to `127.0.0.1`, a redirect to an internal address and DNS
/// rebinding are all refused with ``ImageError/Code/forbiddenAddress``. Off by default in the
/// library (``ImageDownloaderConfiguration/addressPolicy`` is nil); the image service turns it on.
///
/// Refused by ``publicOnly``: loopback (127/8, ::1), private (10/8, 172.16/12, 192.168/16,
/// fc00::/7), shared address space (100.64/10), link-local (169.254/16 — cloud metadata — and
/// fe80::/10), multicast, unspecified (0.0.0.0, :), broadcast, documentation and benchmarking
/// ranges, 0/8, 240/4, and IPv4-mapped or -translated IPv6 forms of any of them.
///
/// ```swift
/// var configuration = ImageDownloaderConfiguration()
/// configuration.addressPolicy = .publicOnly.allowing(networks: ["10.1.2.0/24"], hosts: ["images.internal"])
/// ```
///
/// With a proxy (``ImageDownloaderConfiguration/proxy``) the connection goes to the proxy, which
/// the operator chose: the policy then checks only hosts written as IP addresses, and the proxy
/// must apply its own rules to names.
public struct AddressPolicy: Sendable, Hashable {
    /// Networks always allowed, even inside a refused range.
    public var allowedNetworks: [IPNetwork]
    /// Host names (exact, case-insensitive, or `*.example.com`) whose connections are allowed
    /// whatever they resolve to.
    public var allowedHosts: [String]

    /// A policy that allows public addresses and, beyond them, `allowedNetworks` and `allowedHosts`.
    public init(allowedNetworks: [IPNetwork] = [], allowedHosts: [String] = []) {
        self.allowedNetworks = allowedNetworks
        self.allowedHosts = allowedHosts
    }

    /// Public unicast addresses only.
    public static let publicOnly = AddressPolicy()

    /// This policy with more allowed networks (CIDR strings; invalid ones are ignored) and hosts.
    public func allowing(networks: [String] = [], hosts: [String] = []) -> AddressPolicy {
        var copy = self
        copy.allowedNetworks += networks.compactMap(IPNetwork.init)
        copy.allowedHosts += hosts
        return copy
    }

    /// Whether a connection to `address` (for a URL whose host is `host`) is allowed.
    public func allows(_ address: IPAddress, host: String? = nil) -> Bool {
        if let host, allowsHost(host) { return true }
        if allowedNetworks.contains(where: { $0.contains(address) }) { return true }
        return !address.isReserved
    }

    /// Whether `host` is on the allow-list.
    public func allowsHost(_ host: String) -> Bool {
        let host = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]."))
        return allowedHosts.contains { pattern in
            let pattern = pattern.lowercased()
            if pattern.hasPrefix("*.") { return host.hasSuffix(pattern.dropFirst(1)) }
            return host == pattern
        }
    }
}

/// An IPv4 or IPv6 address as its bytes (4 or 16).
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address's bytes, network order: 4 for IPv4, 16 for IPv6.
    public let bytes: [UInt8]

    /// An address from 4 or 16 bytes; nil for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses the standard text forms (`127.0.0.1`, `::1`, `[::ffff:127.0.0.1]`). Other IPv4
    /// spellings (decimal `2130706433`, octal `0177.0.0.1`) are not parsed here: curl connects
    /// to what they mean, and the connect-time check sees that address.
    public init?(_ text: String) {
        var text = text
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if let percent = text.firstIndex(of: "%") { text = String(text[..<percent]) }  // zone index
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: v6) { Array($0) }
            return
        }
        return nil
    }

    /// Whether this is an IPv4 address (4 bytes).
    public var isIPv4: Bool { bytes.count == 4 }

    /// Dotted decimal for IPv4, the compressed form for IPv6.
    public var description: String {
        if isIPv4 { return bytes.map(String.init).joined(separator: ".") }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var v6 = in6_addr()
        withUnsafeMutableBytes(of: &v6) { $0.copyBytes(from: bytes) }
        inet_ntop(AF_INET6, &v6, &text, socklen_t(text.count))
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The IPv4 address an IPv6 address stands for: IPv4-mapped (::ffff:a.b.c.d),
    /// IPv4-compatible (::a.b.c.d), IPv4/IPv6 translation (64:ff9b::/96) and 6to4 (2002::/16).
    var embeddedIPv4: IPAddress? {
        guard bytes.count == 16 else { return nil }
        let prefix = bytes[0..<12]
        if prefix.elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]) || prefix.allSatisfy({ $0 == 0 }) {
            if prefix.allSatisfy({ $0 == 0 }) && bytes[12..<16].allSatisfy({ $0 == 0 }) { return nil }  // ::
            // ::1
            if prefix.allSatisfy({ $0 == 0 }) && bytes[12..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return nil }
            return IPAddress(bytes: Array(bytes[12..<16]))
        }
        if prefix.elementsEqual([0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0]) {
            return IPAddress(bytes: Array(bytes[12..<16]))
        }
        if bytes[0] == 0x20, bytes[1] == 0x02 { return IPAddress(bytes: Array(bytes[2..<6])) }
        return nil
    }

    /// Whether the address is anything but public unicast (see ``AddressPolicy``).
    public var isReserved: Bool {
        if let v4 = embeddedIPv4 { return v4.isReserved }
        return Self.reservedNetworks.contains { $0.contains(self) }
    }

    private static let reservedNetworks: [IPNetwork] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
        "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
        "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
        "::/128", "::1/128", "100::/64", "2001:db8::/32", "2001::/23", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
    ].map { IPNetwork($0)! }
}

/// An address range in CIDR notation (`10.0.0.0/8`, `fd00::/8`; a bare address is a /32 or /128).
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The network's first address (the bits past the prefix are ignored).
    public let address: IPAddress
    /// How many leading bits are the network's.
    public let prefixLength: Int

    /// Parses `ADDRESS/LENGTH` or a bare address; nil for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let address = IPAddress(String(first)) else { return nil }
        let maximum = address.bytes.count * 8
        let length = parts.count == 2 ? Int(parts[1]) : maximum
        guard let length, (0...maximum).contains(length) else { return nil }
        self.address = address
        self.prefixLength = length
    }

    /// `ADDRESS/LENGTH`.
    public var description: String { "\(address)/\(prefixLength)" }

    /// Whether `candidate` is in this network (IPv4-mapped IPv6 addresses count as IPv4).
    public func contains(_ candidate: IPAddress) -> Bool {
        var candidate = candidate
        if address.isIPv4, !candidate.isIPv4, let v4 = candidate.embeddedIPv4 { candidate = v4 }
        guard candidate.bytes.count == address.bytes.count else { return false }
        var remaining = prefixLength
        for index in address.bytes.indices where remaining > 0 {
            let bits = min(8, remaining)
            let mask: UInt8 = bits == 8 ? 0xFF : ~(0xFF >> UInt8(bits))
            if address.bytes[index] & mask != candidate.bytes[index] & mask { return false }
            remaining -= bits
        }
        return true
    }
}
