import Foundation

@testable import ImageKitServer

extension ImageService {
    /// A service as the integration tests use it: unsigned URLs allowed, the loopback origin's
    /// address exempt from the private-address guard, caches under `cacheDirectory`; `adjust`
    /// changes the rest.
    static func forTests(cacheDirectory: URL, _ adjust: (inout ImageServiceConfiguration) -> Void) throws
        -> ImageService
    {
        var configuration = ImageServiceConfiguration()
        configuration.allowsUnsafe = true
        configuration.allowedNetworks = ["127.0.0.1/32"]
        configuration.cacheDirectory = cacheDirectory
        adjust(&configuration)
        return try ImageService(configuration: configuration)
    }
}
