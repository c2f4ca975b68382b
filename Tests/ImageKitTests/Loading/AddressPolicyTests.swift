import Foundation
import XCTest

@testable import ImageKit

/// The address classifier behind ``AddressPolicy``: every address is classified here, none is
/// connected to (the integration tests connect to loopback only).
final class AddressPolicyTests: XCTestCase {
    func testReservedAddressesAreRefused() {
        let refused = [
            "127.0.0.1", "127.0.0.2", "127.255.255.254", "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255", "192.168.1.1", "169.254.169.254", "169.254.0.1", "100.64.0.1", "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1", "255.255.255.255", "192.0.2.1", "198.51.100.7", "203.0.113.9", "198.18.0.1",
            "::", "::1", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "2001:db8::1",
            "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "[::ffff:127.0.0.2]", "::127.0.0.1",
            "64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "fe80::1%eth0",
        ]
        for text in refused {
            guard let address = IPAddress(text) else { XCTFail("cannot parse \(text)"); continue }
            XCTAssertTrue(address.isReserved, text)
            XCTAssertFalse(AddressPolicy.publicOnly.allows(address), text)
        }
    }

    func testPublicAddressesAreAllowed() {
        for text in [
            "8.8.8.8", "1.1.1.1", "93.184.216.34", "172.15.255.255", "172.32.0.1", "100.128.0.1", "2606:4700::1111",
            "2a00:1450:4001::200e", "::ffff:8.8.8.8",
        ] {
            guard let address = IPAddress(text) else { XCTFail("cannot parse \(text)"); continue }
            XCTAssertFalse(address.isReserved, text)
            XCTAssertTrue(AddressPolicy.publicOnly.allows(address), text)
        }
    }

    func testAllowListsOfNetworksAndHosts() {
        let policy = AddressPolicy.publicOnly.allowing(
            networks: ["10.1.2.0/24", "fd00::/8", "not a cidr"], hosts: ["images.internal", "*.corp.example"])
        XCTAssertEqual(policy.allowedNetworks.count, 2)
        XCTAssertTrue(policy.allows(IPAddress("10.1.2.200")!))
        XCTAssertFalse(policy.allows(IPAddress("10.1.3.1")!))
        XCTAssertTrue(policy.allows(IPAddress("::ffff:10.1.2.3")!), "an IPv4-mapped address is its IPv4 address")
        XCTAssertTrue(policy.allows(IPAddress("fd00::5")!))
        XCTAssertTrue(policy.allows(IPAddress("127.0.0.1")!, host: "images.internal"))
        XCTAssertTrue(policy.allows(IPAddress("127.0.0.1")!, host: "a.b.corp.example"))
        XCTAssertFalse(policy.allows(IPAddress("127.0.0.1")!, host: "corp.example.evil"))
        XCTAssertFalse(policy.allows(IPAddress("127.0.0.1")!, host: "evilcorp.example"))
    }

    func testNetworkParsing() {
        XCTAssertEqual(IPNetwork("192.168.0.0/16")?.prefixLength, 16)
        XCTAssertEqual(IPNetwork("::1")?.prefixLength, 128)
        XCTAssertNil(IPNetwork("10.0.0.0/33"))
        XCTAssertNil(IPNetwork("10.0.0.0/-1"))
        XCTAssertNil(IPNetwork("example.com/8"))
        XCTAssertTrue(IPNetwork("0.0.0.0/0")!.contains(IPAddress("8.8.8.8")!))
        XCTAssertFalse(IPNetwork("0.0.0.0/0")!.contains(IPAddress("2001::1")!))
        XCTAssertEqual(IPAddress("::ffff:127.0.0.1")?.description, "::ffff:127.0.0.1")
        XCTAssertNil(IPAddress("2130706433"), "other IPv4 spellings are left to curl, checked at connect")
    }
}
