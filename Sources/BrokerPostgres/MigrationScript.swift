/// MigrationScript is a migration file cut into its statements, each with the directives written
/// in the comments right above it. The cut follows PostgreSQL's lexical rules for what may hide
/// a semicolon: quoted strings ('…', E'…' with backslash escapes), quoted identifiers ("…"),
/// dollar-quoted bodies ($$…$$, $tag$…$tag$), line comments and nested block comments.
///
/// Directives are comment lines `-- tokenbroker:<word> [argument]`:
/// - `-- tokenbroker:no-transaction` on the file's first line: the file runs outside a
///   transaction, one statement at a time (see `Migrator`).
/// - `-- tokenbroker:batch` above a statement: it is run again and again, bound to the cursor
///   it returned last (`$1`, NULL at first), until it returns no row or NULL.
/// - `-- tokenbroker:contract NNN` above a statement: it is the contract step of migration NNN's
///   expand (CONTRIBUTING.md, "Expand, then contract").
public struct MigrationScript: Sendable, Equatable {
    public struct Statement: Sendable, Equatable {
        /// The statement as written, without its leading comments or the closing semicolon.
        public let text: String
        /// The directives above it: word → argument ("" when none).
        public let directives: [String: String]

        public var isBatch: Bool { directives["batch"] != nil }
        /// The migration whose expand this statement contracts, when it says so.
        public var contracts: Int? { directives["contract"].flatMap { Int($0) } }
    }

    public let statements: [Statement]
    /// Whether the file's first line is `-- tokenbroker:no-transaction`.
    public let noTransaction: Bool

    static let marker = "-- tokenbroker:no-transaction"

    public init(_ text: String) {
        noTransaction = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first
            .map { $0.trimmingCharacters(in: .whitespaces) == Self.marker } ?? false
        statements = Self.split(text).compactMap(Self.statement)
    }

    /// The text cut at every semicolon that ends a statement (the pieces keep their comments).
    static func split(_ text: String) -> [String] {
        let s = Array(text.unicodeScalars)
        var pieces: [String] = [], start = 0, i = 0
        func piece(_ to: Int) -> String { String(String.UnicodeScalarView(s[start..<to])) }
        func at(_ j: Int, _ c: Character) -> Bool { j < s.count && Character(s[j]) == c }
        while i < s.count {
            let c = Character(s[i])
            if c == "-" && at(i + 1, "-") {
                while i < s.count && !at(i, "\n") { i += 1 }
            } else if c == "/" && at(i + 1, "*") {
                var depth = 0
                repeat {
                    if at(i, "/") && at(i + 1, "*") { depth += 1; i += 2 }
                    else if at(i, "*") && at(i + 1, "/") { depth -= 1; i += 2 }
                    else { i += 1 }
                } while depth > 0 && i < s.count
            } else if c == "'" || c == "\"" {
                let escapes = c == "'" && i > 0 && (at(i - 1, "E") || at(i - 1, "e"))
                i += 1
                while i < s.count {
                    if escapes && at(i, "\\") { i += 2; continue }
                    if Character(s[i]) == c {
                        if at(i + 1, c) { i += 2; continue }   // '' or "" inside
                        break
                    }
                    i += 1
                }
                i += 1
            } else if c == "$", let tag = dollarTag(s, i) {
                i += tag.count
                while i < s.count && !(Character(s[i]) == "$" && dollarTag(s, i) == tag) { i += 1 }
                i += tag.count
            } else if c == ";" {
                pieces.append(piece(i))
                i += 1
                start = i
            } else {
                i += 1
            }
        }
        pieces.append(piece(min(i, s.count)))
        return pieces
    }

    /// `$tag$` (or `$$`) starting at `i`, or nil for a parameter such as `$1`.
    private static func dollarTag(_ s: [Unicode.Scalar], _ i: Int) -> [Unicode.Scalar]? {
        var j = i + 1
        while j < s.count, s[j] == "_" || s[j].properties.isAlphabetic || (j > i + 1 && ("0"..."9").contains(s[j])) { j += 1 }
        guard j < s.count, s[j] == "$" else { return nil }
        return Array(s[i...j])
    }

    /// A piece without its leading comments and blank lines, with the directives found in them;
    /// nil when nothing but comments is left.
    static func statement(_ piece: String) -> Statement? {
        var lines = piece.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var directives: [String: String] = [:]
        while let first = lines.first {
            let t = first.trimmingCharacters(in: .whitespaces)
            guard t.isEmpty || t.hasPrefix("--") else { break }
            if t.hasPrefix("-- tokenbroker:") {
                let words = t.dropFirst("-- tokenbroker:".count).split(separator: " ", maxSplits: 1)
                if let w = words.first { directives[String(w)] = words.count > 1 ? String(words[1]).trimmingCharacters(in: .whitespaces) : "" }
            }
            lines.removeFirst()
        }
        let text = lines.joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : Statement(text: text, directives: directives)
    }
}
