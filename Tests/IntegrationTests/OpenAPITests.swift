import Foundation
import Testing

@Suite("The OpenAPI file and the route table agree")
struct OpenAPITests {
    /// `METHOD /path/{}` for every operation in docs/openapi.yaml (paths at two spaces, methods at four).
    func documented() throws -> Set<String> {
        let text = try String(contentsOf: TestEnv.root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        var out = Set<String>(), path: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  /"), line.hasSuffix(":") {
                path = String(line.dropFirst(2).dropLast())
            } else if line.hasPrefix("components:") {
                path = nil
            } else if let p = path, line.hasPrefix("    "), !line.hasPrefix("     "),
                      let m = ["get", "put", "post", "delete", "patch"].first(where: { line == "    \($0):" }) {
                out.insert(m.uppercased() + " " + Self.normalized(p))
            }
        }
        return out
    }

    static func normalized(_ path: String) -> String {
        path.replacingOccurrences(of: #"\{[^}]*\}"#, with: "{}", options: .regularExpression)
    }

    @Test("every route that exists is documented, and every documented route exists")
    func routesMatchOpenAPI() throws {
        let r = try runCommand("tokenbroker", ["routes"], env: ["DATABASE_URL": try TestEnv.databaseURL()])
        #expect(r.status == 0, "\(r.err)")
        // A streamed route ("*") serves any method: documented as the five an API uses.
        let served = Set(r.out.split(separator: "\n").flatMap { line -> [String] in
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            let methods = parts[0] == "*" ? ["GET", "POST", "PUT", "PATCH", "DELETE"] : [parts[0]]
            return methods.map { $0 + " " + Self.normalized(parts[1]) }
        })
        let docs = try documented()
        #expect(served.count >= 12)
        #expect(served.subtracting(docs).isEmpty, "undocumented: \(served.subtracting(docs).sorted())")
        #expect(docs.subtracting(served).isEmpty, "documented but not served: \(docs.subtracting(served).sorted())")
    }
}
