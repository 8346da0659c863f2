/// Arguments reads `--name value` (or `--name=value`) options, flags and positionals as one
/// command's CommandSpec allows; repeated options keep every value. Anything the CommandSpec does not
/// name is refused with the command's usage; `--help` or `-h` asks for that usage.
struct Arguments {
    var positionals: [String] = []
    var options: [String: [String]] = [:]

    struct Invalid: Error, CustomStringConvertible { let description: String }

    /// `--help` was given: print the usage, exit 0.
    struct Help: Error { let usage: String }

    init(_ args: [String], _ spec: CommandSpec) throws {
        let usage = "usage: " + spec.usage
        let options = spec.configured ? spec.options.union(["config"]) : spec.options
        var i = 0
        while i < args.count {
            let a = args[i]
            if a == "--help" || a == "-h" { throw Help(usage: spec.details.isEmpty ? usage : usage + "\n\n" + spec.details) }
            if a.hasPrefix("--") {
                var name = String(a.dropFirst(2))
                var inline: String?
                if let eq = name.firstIndex(of: "=") {
                    inline = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
                if spec.flags.contains(name) {
                    guard inline == nil else { throw Invalid(description: "option --\(name) takes no value\n" + usage) }
                    self.options[name, default: []].append("true")
                } else if options.contains(name) {
                    if let inline {
                        self.options[name, default: []].append(inline)
                    } else {
                        guard i + 1 < args.count, !args[i + 1].hasPrefix("--") else { throw Invalid(description: "option --\(name) needs a value\n" + usage) }
                        self.options[name, default: []].append(args[i + 1])
                        i += 1
                    }
                } else {
                    throw Invalid(description: "unknown option --\(name) for \(spec.name)\n" + usage)
                }
            } else if a.hasPrefix("-"), a.count > 1 {
                throw Invalid(description: "unknown option \(a) for \(spec.name)\n" + usage)
            } else {
                positionals.append(a)
            }
            i += 1
        }
        guard spec.positionals.contains(positionals.count) else {
            throw Invalid(description: (positionals.count > spec.positionals.upperBound ? "unexpected argument '\(positionals.last!)'" : "a subcommand or argument is missing")
                          + "\n" + usage)
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
