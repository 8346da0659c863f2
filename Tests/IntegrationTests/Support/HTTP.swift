import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// HTTP is the tests' client: JSON in, status and JSON out, no redirects followed.
struct HTTP {
    struct Reply: @unchecked Sendable {
        let status: Int
        let headers: [String: String]
        let data: Data
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:] }
        var text: String { String(decoding: data, as: UTF8.self) }
        subscript(_ k: String) -> Any? { json[k] }
    }

    static let session: URLSession = {
        let c = URLSessionConfiguration.ephemeral
        c.httpMaximumConnectionsPerHost = 200
        c.timeoutIntervalForRequest = 30
        return URLSession(configuration: c, delegate: NoRedirect(), delegateQueue: nil)
    }()

    static func request(_ method: String, _ url: String, key: String? = nil, json: Any? = nil, body: Data? = nil,
                        headers: [String: String] = [:]) async throws -> Reply {
        var r = URLRequest(url: URL(string: url)!)
        r.httpMethod = method
        if let key { r.setValue("Bearer " + key, forHTTPHeaderField: "Authorization") }
        if let json {
            r.httpBody = try JSONSerialization.data(withJSONObject: json)
            r.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let body { r.httpBody = body }
        for (k, v) in headers { r.setValue(v, forHTTPHeaderField: k) }
        let (data, response) = try await session.data(for: r)
        let http = response as! HTTPURLResponse
        var h: [String: String] = [:]
        for (k, v) in http.allHeaderFields { h[String(describing: k).lowercased()] = String(describing: v) }
        return Reply(status: http.statusCode, headers: h, data: data)
    }

    static func post(_ url: String, key: String? = nil, json: Any? = nil) async throws -> Reply { try await request("POST", url, key: key, json: json) }
    static func get(_ url: String, key: String? = nil) async throws -> Reply { try await request("GET", url, key: key) }
    static func put(_ url: String, key: String? = nil, json: Any) async throws -> Reply { try await request("PUT", url, key: key, json: json) }
}

private final class NoRedirect: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}
