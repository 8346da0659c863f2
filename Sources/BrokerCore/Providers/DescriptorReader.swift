import Foundation

extension ProviderDescriptor {
    /// Reader reads one JSON object of a descriptor, naming each member by its path in errors.
    struct Reader {
        let object: [String: Any]
        let prefix: String

        init(_ object: [String: Any], path: String) {
            self.object = object
            prefix = path
        }

        var keys: [String] { object.keys.sorted() }
        func path(_ member: String) -> String { prefix.isEmpty ? member : member.isEmpty ? prefix : prefix + "." + member }

        func only(_ allowed: Set<String>) throws(DescriptorError) {
            if let unknown = keys.first(where: { !allowed.contains($0) }) {
                throw DescriptorError(path(unknown), "is not a member here (allowed: \(allowed.sorted().joined(separator: ", ")))")
            }
        }

        private func raw(_ k: String) -> Any? { object[k].flatMap { $0 is NSNull ? nil : $0 } }

        func string(_ k: String) throws(DescriptorError) -> String? {
            guard let v = raw(k) else { return nil }
            guard let s = v as? String, !s.isEmpty, s.utf8.count <= 2048 else { throw DescriptorError(path(k), "must be a non-empty string") }
            return s
        }

        func bool(_ k: String) throws(DescriptorError) -> Bool? {
            guard let v = raw(k) else { return nil }
            guard let n = v as? NSNumber, JSONPointer.isBoolean(n) else { throw DescriptorError(path(k), "must be true or false") }
            return n.boolValue
        }

        func number(_ k: String) throws(DescriptorError) -> Double? {
            guard let v = raw(k) else { return nil }
            guard let n = v as? NSNumber, !JSONPointer.isBoolean(n) else { throw DescriptorError(path(k), "must be a number") }
            return n.doubleValue
        }

        func numbers(_ k: String) throws(DescriptorError) -> [Int]? {
            guard let v = raw(k) else { return nil }
            guard let a = v as? [Any], a.allSatisfy({ ($0 as? NSNumber).map { !JSONPointer.isBoolean($0) } == true }) else {
                throw DescriptorError(path(k), "must be an array of numbers")
            }
            return a.map { ($0 as! NSNumber).intValue }
        }

        func strings(_ k: String) throws(DescriptorError) -> [String]? {
            guard let v = raw(k) else { return nil }
            guard let a = v as? [String] else { throw DescriptorError(path(k), "must be an array of strings") }
            return a
        }

        func object(_ k: String) throws(DescriptorError) -> Reader? {
            guard let v = raw(k) else { return nil }
            guard let o = v as? [String: Any] else { throw DescriptorError(path(k), "must be an object") }
            return Reader(o, path: path(k))
        }

        func url(_ k: String) throws(DescriptorError) -> URL? {
            guard let s = try string(k) else { return nil }
            guard let u = URL(string: s), ["https", "http"].contains(u.scheme?.lowercased() ?? ""), u.host?.isEmpty == false, !s.contains("{") else {
                throw DescriptorError(path(k), "must be an https or http URL, placeholders filled in (got '\(s.prefix(200))')")
            }
            return u
        }

        /// A URL in which `placeholder` may stand for a value filled in at each use.
        func template(_ k: String, _ placeholder: String) throws(DescriptorError) -> String? {
            guard let s = try string(k) else { return nil }
            let filled = s.replacingOccurrences(of: placeholder, with: "x")
            guard let u = URL(string: filled), ["https", "http"].contains(u.scheme?.lowercased() ?? ""), u.host?.isEmpty == false, !filled.contains("{") else {
                throw DescriptorError(path(k), "must be an https or http URL (\(placeholder) may stand for its value; got '\(s.prefix(200))')")
            }
            return s
        }

        func pointer(_ k: String) throws(DescriptorError) -> JSONPointer? {
            guard let s = try string(k) else { return nil }
            guard let p = JSONPointer(s) else { throw DescriptorError(path(k), "must be a JSON pointer (RFC 6901) such as /access_token") }
            return p
        }

        func choice<E: RawRepresentable & CaseIterable>(_ k: String, _: E.Type) throws(DescriptorError) -> E? where E.RawValue == String {
            guard let s = try string(k) else { return nil }
            guard let e = E(rawValue: s) else { throw DescriptorError(path(k), "must be one of: \(E.allCases.map(\.rawValue).joined(separator: ", "))") }
            return e
        }

        func choice(_ k: String, _ allowed: [String]) throws(DescriptorError) -> String? {
            guard let s = try string(k) else { return nil }
            guard allowed.contains(s) else { throw DescriptorError(path(k), "must be one of: \(allowed.joined(separator: ", "))") }
            return s
        }

        /// Extra request parameters: an object of names to strings, in name order.
        func parameters(_ k: String) throws(DescriptorError) -> [Parameter] {
            guard let o = try object(k) else { return [] }
            return try o.keys.map { name throws(DescriptorError) in
                guard Self.isName(name), let v = o.object[name] as? String, v.utf8.count <= 1024 else {
                    throw DescriptorError(o.path(name), "must be a parameter name with a string value (at most 1 KiB)")
                }
                return Parameter(name, v)
            }
        }

        /// RFC 6749 error codes.
        func codes(_ k: String) throws(DescriptorError) -> Set<String>? {
            guard let a = try strings(k) else { return nil }
            guard a.allSatisfy(OAuthError.isCode) else { throw DescriptorError(path(k), "must list RFC 6749 error codes (a-z, 0-9, _)") }
            return Set(a)
        }

        func name(_ k: String) throws(DescriptorError) -> String? {
            guard let s = try string(k) else { return nil }
            guard Self.isName(s) else { throw DescriptorError(path(k), "must be a parameter name") }
            return s
        }

        /// 1…64 of letters, digits, `_`, `-`, `.`.
        static func isName(_ s: String) -> Bool {
            (1...64).contains(s.utf8.count) && s.utf8.allSatisfy {
                ($0 >= 97 && $0 <= 122) || ($0 >= 65 && $0 <= 90) || ($0 >= 48 && $0 <= 57) || $0 == 95 || $0 == 45 || $0 == 46
            }
        }
    }
}
