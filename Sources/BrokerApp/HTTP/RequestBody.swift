import BrokerCore
import BrokerHTTP
import Foundation

/// RequestBody decodes JSON bodies strictly enough to refuse garbage with a precise 400:
/// `invalid_json` when it is not JSON (or not an object), `invalid_request` when a member has
/// the wrong type. An empty body is `{}`.
enum RequestBody {
    static func decode<T: Decodable>(_ type: T.Type, from req: HTTPRequest) throws -> T {
        let bytes = req.body.isEmpty ? Array("{}".utf8) : req.body
        guard let first = bytes.first(where: { $0 != 0x20 && $0 != 0x0a && $0 != 0x0d && $0 != 0x09 }), first == UInt8(ascii: "{") else {
            throw BrokerError.badRequest(code: "invalid_json", message: "the body must be a JSON object")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch DecodingError.dataCorrupted(let c) where c.codingPath.isEmpty {
            throw BrokerError.badRequest(code: "invalid_json", message: "the body is not valid JSON")
        } catch let DecodingError.typeMismatch(_, c), let DecodingError.valueNotFound(_, c), let DecodingError.dataCorrupted(c) {
            throw BrokerError.badRequest(code: "invalid_request", message: "'\(c.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type or value")
        } catch DecodingError.keyNotFound(let k, _) {
            throw BrokerError.badRequest(code: "invalid_request", message: "'\(k.stringValue)' is required")
        } catch {
            throw BrokerError.badRequest(code: "invalid_json", message: "the body is not valid JSON")
        }
    }
}
