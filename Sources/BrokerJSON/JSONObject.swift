import BrokerCore
import CSimdJSONShim

/// JSONObject reads request bodies through simdjson (RFC 8259: UTF-8 checked, numbers exact;
/// an object with a repeated name, or a string holding NUL, is refused). It owns the parsed
/// document; nested objects share it. Accessors throw `invalid_request` naming the member when
/// it has the wrong type, so every route reports bad input the same way; a missing member or
/// JSON null reads as nil.
///
/// Thread-safety: a value is used by one request on one thread; the document is read-only.
public final class JSONObject: @unchecked Sendable {
    private let document: Document
    private let node: tb_sj_value
    /// Where this object sits in the body, for error messages: the object it was read from,
    /// the member's name and, for an array's item, its index (-1 for none). The path is built
    /// only when an error names it: a batch reads a thousand items and names one when it is wrong.
    private let parent: JSONObject?
    private let key: String
    private let index: Int

    private var path: String {
        guard let parent else { return "" }
        return parent.path + key + (index < 0 ? "." : "[\(index)].")
    }

    final class Document: @unchecked Sendable {
        let pointer: OpaquePointer
        init(_ pointer: OpaquePointer) { self.pointer = pointer }
        deinit { tb_sj_free(pointer) }
    }

    private init(document: Document, node: tb_sj_value, parent: JSONObject?, key: String, index: Int) {
        self.document = document
        self.node = node
        self.parent = parent
        self.key = key
        self.index = index
    }

    /// Parses a body that must be one JSON object; an empty body is `{}`.
    public static func parse(_ bytes: [UInt8]) throws(BrokerError) -> JSONObject {
        let text = bytes.isEmpty ? Array("{}".utf8) : bytes
        var root = tb_sj_value()
        let parsed = text.withUnsafeBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buf.count) { tb_sj_parse($0, buf.count, &root) }
        }
        guard let parsed else { throw .badRequest(code: "invalid_json", message: "the body is not valid JSON") }
        let doc = Document(parsed)
        guard tb_sj_type_of(root) == TB_SJ_OBJECT else {
            throw .badRequest(code: "invalid_json", message: "the body must be a JSON object")
        }
        return JSONObject(document: doc, node: root, parent: nil, key: "", index: -1)
    }

    private func member(_ key: String) -> tb_sj_value? {
        var key = key
        var m = tb_sj_value()
        let found = key.withUTF8 { k in k.withMemoryRebound(to: CChar.self) { tb_sj_member(node, $0.baseAddress, $0.count, &m) } }
        guard found, tb_sj_type_of(m) != TB_SJ_NULL else { return nil }
        return m
    }

    private func wrong(_ key: String, _ expected: String) -> BrokerError {
        .badRequest(code: "invalid_request", message: "'\(path)\(key)' must be \(expected)")
    }

    private static func text(_ v: tb_sj_value) -> String {
        var n = 0
        let p = tb_sj_string(v, &n)
        return String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self)
    }

    public func string(_ key: String) throws(BrokerError) -> String? {
        guard let m = member(key) else { return nil }
        guard tb_sj_type_of(m) == TB_SJ_STRING else { throw wrong(key, "a string") }
        return Self.text(m)
    }

    public func int(_ key: String) throws(BrokerError) -> Int? {
        guard let m = member(key) else { return nil }
        // An integer beyond 64 signed bits is no integer the broker takes.
        guard tb_sj_type_of(m) == TB_SJ_INT64 else { throw wrong(key, "an integer") }
        return Int(tb_sj_int64(m))
    }

    public func double(_ key: String) throws(BrokerError) -> Double? {
        guard let m = member(key) else { return nil }
        let t = tb_sj_type_of(m)
        guard t == TB_SJ_INT64 || t == TB_SJ_UINT64 || t == TB_SJ_DOUBLE else { throw wrong(key, "a number") }
        return tb_sj_double(m)
    }

    public func bool(_ key: String) throws(BrokerError) -> Bool? {
        guard let m = member(key) else { return nil }
        guard tb_sj_type_of(m) == TB_SJ_BOOL else { throw wrong(key, "true or false") }
        return tb_sj_bool(m)
    }

    /// The values of an array member, read in one pass (nil when absent; `expected` names what
    /// it must be when it is no array).
    private func elements(_ key: String, _ expected: String) throws(BrokerError) -> [tb_sj_value]? {
        guard let m = member(key) else { return nil }
        guard tb_sj_type_of(m) == TB_SJ_ARRAY else { throw wrong(key, expected) }
        let count = tb_sj_array_count(m)
        return [tb_sj_value](unsafeUninitializedCapacity: count) { buf, n in n = tb_sj_array_values(m, buf.baseAddress, count) }
    }

    public func strings(_ key: String) throws(BrokerError) -> [String]? {
        guard let values = try elements(key, "an array of strings") else { return nil }
        return try values.map { e throws(BrokerError) -> String in
            guard tb_sj_type_of(e) == TB_SJ_STRING else { throw wrong(key, "an array of strings") }
            return Self.text(e)
        }
    }

    public func object(_ key: String) throws(BrokerError) -> JSONObject? {
        guard let m = member(key) else { return nil }
        guard tb_sj_type_of(m) == TB_SJ_OBJECT else { throw wrong(key, "an object") }
        return JSONObject(document: document, node: m, parent: self, key: key, index: -1)
    }

    public func objects(_ key: String) throws(BrokerError) -> [JSONObject]? {
        guard let values = try elements(key, "an array of objects") else { return nil }
        return try values.enumerated().map { i, e throws(BrokerError) -> JSONObject in
            guard tb_sj_type_of(e) == TB_SJ_OBJECT else { throw wrong(key, "an array of objects") }
            return JSONObject(document: document, node: e, parent: self, key: key, index: i)
        }
    }

    /// A member that is one object or an array of them, as an array.
    public func objectOrObjects(_ key: String) throws(BrokerError) -> [JSONObject]? {
        guard let m = member(key) else { return nil }
        if tb_sj_type_of(m) == TB_SJ_OBJECT { return [JSONObject(document: document, node: m, parent: self, key: key, index: -1)] }
        guard tb_sj_type_of(m) == TB_SJ_ARRAY else { throw wrong(key, "an object or an array of objects") }
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
