import BrokerCore
import CJansson

/// JSONObject reads request bodies through jansson (RFC 8259; duplicate keys refused). It owns
/// the parsed document; nested objects share it. Accessors throw `invalid_request` naming the
/// member when it has the wrong type, so every route reports bad input the same way; a missing
/// member or JSON null reads as nil.
///
/// Thread-safety: a value is used by one request on one thread.
public final class JSONObject: @unchecked Sendable {
    private let document: Document
    private let node: OpaquePointer
    private let path: String

    final class Document: @unchecked Sendable {
        let root: OpaquePointer
        init(_ root: OpaquePointer) { self.root = root }
        deinit { tb_json_decref(UnsafeMutablePointer(root)) }
    }

    private init(document: Document, node: OpaquePointer, path: String) {
        self.document = document
        self.node = node
        self.path = path
    }

    /// Parses a body that must be one JSON object; an empty body is `{}`.
    public static func parse(_ bytes: [UInt8]) throws(BrokerError) -> JSONObject {
        let text = bytes.isEmpty ? Array("{}".utf8) : bytes
        var error = json_error_t()
        let parsed = text.withUnsafeBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buf.count) {
                json_loadb($0, buf.count, tb_JSON_REJECT_DUPLICATES, &error)
            }
        }
        guard let root = parsed.map({ OpaquePointer($0) }) else {
            throw .badRequest(code: "invalid_json", message: "the body is not valid JSON")
        }
        let doc = Document(root)
        guard tb_json_typeof(UnsafePointer(root)) == JSON_OBJECT else {
            throw .badRequest(code: "invalid_json", message: "the body must be a JSON object")
        }
        return JSONObject(document: doc, node: root, path: "")
    }

    private func member(_ key: String) -> UnsafeMutablePointer<json_t>? {
        // withCString lends a native string's bytes; a String passed as a C string is copied to
        // the heap first (five lookups a token request).
        guard let m = key.withCString({ json_object_get(UnsafePointer(node), $0) }), tb_json_typeof(m) != JSON_NULL else { return nil }
        return m
    }

    private func wrong(_ key: String, _ expected: String) -> BrokerError {
        .badRequest(code: "invalid_request", message: "'\(path)\(key)' must be \(expected)")
    }

    public func string(_ key: String) throws(BrokerError) -> String? {
        guard let m = member(key) else { return nil }
        guard tb_json_typeof(m) == JSON_STRING else { throw wrong(key, "a string") }
        return String(decoding: UnsafeRawBufferPointer(start: json_string_value(m), count: json_string_length(m)), as: UTF8.self)
    }

    public func int(_ key: String) throws(BrokerError) -> Int? {
        guard let m = member(key) else { return nil }
        guard tb_json_typeof(m) == JSON_INTEGER else { throw wrong(key, "an integer") }
        return Int(json_integer_value(m))
    }

    public func double(_ key: String) throws(BrokerError) -> Double? {
        guard let m = member(key) else { return nil }
        let t = tb_json_typeof(m)
        guard t == JSON_INTEGER || t == JSON_REAL else { throw wrong(key, "a number") }
        return json_number_value(m)
    }

    public func bool(_ key: String) throws(BrokerError) -> Bool? {
        guard let m = member(key) else { return nil }
        let t = tb_json_typeof(m)
        guard t == JSON_TRUE || t == JSON_FALSE else { throw wrong(key, "true or false") }
        return t == JSON_TRUE
    }

    public func strings(_ key: String) throws(BrokerError) -> [String]? {
        guard let m = member(key) else { return nil }
        guard tb_json_typeof(m) == JSON_ARRAY else { throw wrong(key, "an array of strings") }
        return try (0..<json_array_size(m)).map { i throws(BrokerError) -> String in
            let e = json_array_get(m, i)!
            guard tb_json_typeof(e) == JSON_STRING else { throw wrong(key, "an array of strings") }
            return String(decoding: UnsafeRawBufferPointer(start: json_string_value(e), count: json_string_length(e)), as: UTF8.self)
        }
    }

    public func object(_ key: String) throws(BrokerError) -> JSONObject? {
        guard let m = member(key) else { return nil }
        guard tb_json_typeof(m) == JSON_OBJECT else { throw wrong(key, "an object") }
        return JSONObject(document: document, node: OpaquePointer(m), path: path + key + ".")
    }

    public func objects(_ key: String) throws(BrokerError) -> [JSONObject]? {
        guard let m = member(key) else { return nil }
        guard tb_json_typeof(m) == JSON_ARRAY else { throw wrong(key, "an array of objects") }
        return try (0..<json_array_size(m)).map { i throws(BrokerError) -> JSONObject in
            let e = json_array_get(m, i)!
            guard tb_json_typeof(e) == JSON_OBJECT else { throw wrong(key, "an array of objects") }
            return JSONObject(document: document, node: OpaquePointer(e), path: path + key + "[\(i)].")
        }
    }

    /// A member that is one object or an array of them, as an array.
    public func objectOrObjects(_ key: String) throws(BrokerError) -> [JSONObject]? {
        guard let m = member(key) else { return nil }
        if tb_json_typeof(m) == JSON_OBJECT { return [JSONObject(document: document, node: OpaquePointer(m), path: path + key + ".")] }
        guard tb_json_typeof(m) == JSON_ARRAY else { throw wrong(key, "an object or an array of objects") }
        return try objects(key)
    }

    /// A member that must be present and a non-empty string.
    public func requiredString(_ key: String) throws(BrokerError) -> String {
        guard let s = try string(key), !s.isEmpty else {
            throw .badRequest(code: "invalid_request", message: "'\(path)\(key)' is required")
        }
        return s
    }
}
