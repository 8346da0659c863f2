import Foundation
import Testing

/// scripts/imports-check.py (run by `make test`) holds Package.swift to what each target
/// imports; shown passing on this tree and failing on a copy broken both ways it guards against.
@Suite("Package.swift declares exactly what each target imports")
struct PackageImportsTests {
    /// Runs the checker on the package at `root`: its exit status and what it printed.
    func check(_ root: URL) throws -> (status: Int32, err: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", TestEnv.root.appendingPathComponent("scripts/imports-check.py").path, root.path]
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: e, as: UTF8.self))
    }

    @Test("this tree passes")
    func treePasses() throws {
        let r = try check(TestEnv.root)
        #expect(r.status == 0, "\(r.err)")
    }

    @Test("a copy with an undeclared import and an unused dependency fails, naming both")
    func brokenCopyFails() throws {
        let fm = FileManager.default
        let copy = fm.temporaryDirectory.appendingPathComponent("imports-check-" + UUID().uuidString.prefix(8))
        try fm.createDirectory(at: copy, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: copy) }
        for item in ["Package.swift", "Sources", "Tests"] {
            try fm.copyItem(at: TestEnv.root.appendingPathComponent(item), to: copy.appendingPathComponent(item))
        }
        // The pure core reaching for an adapter, and a dependency no file of its target imports.
        try "import BrokerPostgres\n".write(to: copy.appendingPathComponent("Sources/BrokerCore/Leak.swift"), atomically: true, encoding: .utf8)
        let manifest = copy.appendingPathComponent("Package.swift")
        let text = try String(contentsOf: manifest, encoding: .utf8)
        let broken = text.replacingOccurrences(of: #".target(name: "BrokerCore"),"#, with: #".target(name: "BrokerCore", dependencies: ["COpenSSL"]),"#)
        #expect(broken != text, "Package.swift no longer declares BrokerCore the way this test expects")
        try broken.write(to: manifest, atomically: true, encoding: .utf8)

        let r = try check(copy)
        #expect(r.status == 1)
        #expect(r.err.contains("BrokerCore: imports BrokerPostgres (Leak.swift) without declaring it"), "\(r.err)")
        #expect(r.err.contains("BrokerCore: declares COpenSSL in Package.swift but never imports it"), "\(r.err)")
    }
}
