import Foundation
import HTTPTypes
import ImageKitServer

extension ImageService {
    /// A request from strings, as the tests write them.
    func handle(method: String, path: String, headers: [String: String]) async -> ImageServiceResponse {
        var fields = HTTPFields()
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            fields.append(HTTPField(name: HTTPField.Name(name)!, value: value))
        }
        let request = HTTPRequest(
            method: HTTPRequest.Method(method)!, scheme: nil, authority: nil, path: path, headerFields: fields)
        return await handle(request)
    }
}
