/// Arguments reads `--name value` options and positionals; repeated options keep every value.
struct Arguments {
    var positionals: [String] = []
    var options: [String: [String]] = [:]

    struct Invalid: Error, CustomStringConvertible { let description: String }

    init(_ args: [String], flags: Set<String> = []) throws {
        var i = 0
        while i < args.count {
            let a = args[i]
            if a.hasPrefix("--") {
                let name = String(a.dropFirst(2))
                if let eq = name.firstIndex(of: "=") {
                    options[String(name[..<eq]), default: []].append(String(name[name.index(after: eq)...]))
                } else if flags.contains(name) {
                    options[name, default: []].append("true")
                } else {
                    guard i + 1 < args.count else { throw Invalid(description: "option --\(name) needs a value") }
                    options[name, default: []].append(args[i + 1])
                    i += 1
                }
            } else {
                positionals.append(a)
            }
            i += 1
        }
    }

    func value(_ name: String) -> String? { options[name]?.last }
    func values(_ name: String) -> [String] { options[name] ?? [] }
    func flag(_ name: String) -> Bool { options[name] != nil }

    func required(_ name: String) throws -> String {
        guard let v = value(name), !v.isEmpty else { throw Invalid(description: "option --\(name) is required") }
        return v
    }
}
