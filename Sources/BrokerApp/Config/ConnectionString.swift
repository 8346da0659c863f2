/// ConnectionString checks the shape of a PostgreSQL connection string before libpq sees it:
/// a `postgresql://` (or `postgres://`) URL, or `key=value` settings as libpq reads them
/// (`host=/run/pg dbname=tokenbroker`, values optionally in single quotes). libpq would read a
/// string of neither shape as settings it cannot parse, or fall back to its defaults and report a
/// socket that has nothing to do with the value; this names the variable instead. The value
/// itself is never repeated (it may hold a password).
enum ConnectionString {
    static func check(_ value: String, variable: String) throws(BrokerConfig.Invalid) {
        let lower = value.lowercased()
        if lower.hasPrefix("postgresql://") || lower.hasPrefix("postgres://") { return }
        let example = "must be a PostgreSQL connection URL (postgresql://user@host:5432/dbname) or key=value settings (host=… dbname=…)"
        if let scheme = lower.range(of: "://") {
            throw BrokerConfig.Invalid(description: "\(variable) \(example); its scheme '\(value[..<scheme.lowerBound])' is neither postgresql nor postgres")
        }
        guard settings(Array(value.utf8)) else { throw BrokerConfig.Invalid(description: "\(variable) \(example)") }
    }

    /// True when `s` is one or more `key=value` pairs separated by spaces.
    static func settings(_ s: [UInt8]) -> Bool {
        var i = 0, pairs = 0
        func spaces() { while i < s.count, s[i] == 32 || s[i] == 9 || s[i] == 10 || s[i] == 13 { i += 1 } }
        while true {
            spaces()
            if i == s.count { return pairs > 0 }
            let keyStart = i
            while i < s.count, s[i] == 95 || (97...122).contains(s[i]) || (65...90).contains(s[i]) || (48...57).contains(s[i]) { i += 1 }
            guard i > keyStart else { return false }
            spaces()
            guard i < s.count, s[i] == 61 else { return false }   // '='
            i += 1
            spaces()
            if i < s.count, s[i] == 39 {                             // a quoted value, \' and \\ escaped
                i += 1
                while i < s.count, s[i] != 39 { i += s[i] == 92 ? 2 : 1 }
                guard i < s.count else { return false }
                i += 1
            } else {
                while i < s.count, !(s[i] == 32 || s[i] == 9 || s[i] == 10 || s[i] == 13) { i += 1 }
            }
            pairs += 1
        }
    }
}
