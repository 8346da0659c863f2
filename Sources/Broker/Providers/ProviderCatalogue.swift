import BrokerCore
import Foundation

/// ProviderCatalogue holds the provider descriptors a registration may name (`"provider":
/// "github"`): the catalogue shipped with the broker, and the operator's own, read from folders of
/// `<name>.json` files at start (a later folder's entry replaces an earlier one's).
///
/// A registration's descriptor is resolved here once, when it is stored: the entry, the
/// registration's `descriptor` merged over it (RFC 7396), its `protocol` and `issuer` over that;
/// then checked (`ProviderDescriptor(json:)`). Entries may hold placeholders (`{your-org}`) that
/// only a registration's values fill, so an entry is checked as JSON when read, as a descriptor
/// when used.
///
/// Thread-safety: immutable.
public struct ProviderCatalogue: Sendable {
    /// Entries by name, as compact JSON objects.
    public let entries: [String: String]

    public init(entries: [String: String] = [:]) { self.entries = entries }

    /// A provider name: what a file may be called (`github-app`).
    public static func isName(_ s: String) -> Bool {
        (1...64).contains(s.utf8.count) && s.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 95 }
    }

    /// Reads every `*.json` file of `folders`, in order. A file that is not a JSON object, or is
    /// named against the rule, is a configuration error naming it.
    public static func load(_ folders: [URL]) throws -> ProviderCatalogue {
        var entries: [String: String] = [:]
        let fm = FileManager.default
        for folder in folders {
            let names = try fm.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }.sorted()
            for file in names {
                let name = String(file.dropLast(5))
                let path = folder.appendingPathComponent(file).path
                guard isName(name) else { throw CatalogueError(path: path, problem: "a provider's file is named [a-z0-9_-]{1,64}.json") }
                guard let data = fm.contents(atPath: path), let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
                    throw CatalogueError(path: path, problem: "is not a JSON object")
                }
                entries[name] = ProviderDescriptor.canonical(object)
            }
        }
        return ProviderCatalogue(entries: entries)
    }

    /// A catalogue file that cannot be used.
    public struct CatalogueError: Error, CustomStringConvertible {
        public let path: String
        public let problem: String
        public var description: String { "provider catalogue: \(path) \(problem)" }
    }

    /// The registration with its provider resolved: descriptor, catalogue name, and issuer (the
    /// registration's; else the descriptor's; else, for a provider without metadata, the
    /// origin of its token endpoint). 400 `unknown_provider` or `invalid_descriptor` naming what
    /// is wrong; nothing is changed.
    public func resolve(_ reg: ClientRegistration, _ choice: ProviderChoice) throws(BrokerError) -> ClientRegistration {
        var c = reg
        guard !choice.isOpenIDDefault else {
            c.provider = nil
            c.descriptor = .openID
            return c
        }
        var object: [String: Any] = [:]
        if let name = choice.provider {
            guard let text = entries[name], let entry = Self.object(text) else {
                throw .badRequest(code: "unknown_provider", message: "no provider '\(name.prefix(64))' in the catalogue (known: \(entries.keys.sorted().joined(separator: ", ")))")
            }
            object = entry
        }
        if let patch = choice.patch {
            guard let p = Self.object(patch) else { throw .badRequest(code: "invalid_descriptor", message: "'descriptor' must be a JSON object") }
            object = JSONMergePatch.apply(p, to: object) as? [String: Any] ?? [:]
        }
        if let p = choice.protocolName { object["protocol"] = p }
        if !c.issuer.isEmpty { object["issuer"] = c.issuer }
        do { c.descriptor = try ProviderDescriptor(json: object) } catch {
            throw .badRequest(code: "invalid_descriptor", message: "descriptor: \(error)")
        }
        c.provider = choice.provider
        if c.issuer.isEmpty {
            guard let issuer = c.descriptor.issuer ?? c.descriptor.endpoints.token.map(ClientRegistration.origin(of:)) else {
                throw .badRequest(code: "invalid_request", message: "'issuer' is required (or a descriptor with endpoints.token)")
            }
            c.issuer = issuer
        }
        return c
    }

    private static func object(_ text: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
    }
}
