import Broker
import BrokerCrypto
import Foundation

/// SealingKeyCommand is `tokenbroker sealing-key`: a new key, the count of sealed values by
/// key, and re-sealing under the current key (docs/reference/configuration.md: the rotation procedure).
enum SealingKeyCommand {
    static let usage = """
        tokenbroker sealing-key generate [--id ID]
          print a new random AES-256 sealing key entry (id:base64)
        tokenbroker sealing-key count [--config FILE]
          sealed values stored, by the key that sealed them: {"current": ID, "values": {ID: n}}
        tokenbroker sealing-key reseal [--batch N] [--config FILE]
          re-seal every sealed value under the current key, safe while replicas serve (run it again to resume):
          a progress bar on a terminal, a JSON summary on stdout; exit 0, or 3 when some values do not open here
          or are still under another key (run it again)
        """

    /// Needs no configuration.
    static func generate(_ a: Arguments) throws -> Int32 {
        guard a.value("batch") == nil, a.value("config") == nil else { throw Arguments.Invalid(description: "generate takes only --id\nusage: " + usage) }
        print(try SealingKeys.generate(id: a.value("id") ?? "k1"))
        return 0
    }

    static func run(_ a: Arguments, _ rt: BrokerRuntime) throws -> Int32 {
        guard a.value("id") == nil else { throw Arguments.Invalid(description: "--id is for generate\nusage: " + usage) }
        guard a.value("batch") == nil || a.positionals.first == "reseal" else { throw Arguments.Invalid(description: "--batch is for reseal\nusage: " + usage) }
        switch a.positionals.first {
        case "count":
            print(render(current: rt.sealing.current, values: try rt.sealing.count(now: rt.clock.now())))
            return 0
        case "reseal":
            let batch = try a.value("batch").map { v -> Int in
                guard let n = Int(v), (1...10_000).contains(n) else { throw Arguments.Invalid(description: "--batch must be 1...10000") }
                return n
            } ?? 200
            let bar = ProgressBar()
            let clock = rt.clock
            let s = try rt.sealing.run(batch: batch, now: { clock.now() }) { done, total in bar.show(done, of: total, "re-sealed") }
            bar.finish()
            print(render(current: rt.sealing.current, values: s.values,
                         extra: [("resealed", String(s.resealed)), ("unopenable", String(s.unopenable)), ("passes", String(s.passes)),
                                 ("remaining", String(s.remaining))]))
            if s.unopenable > 0 {
                FileHandle.standardError.write(Data("tokenbroker: \(s.unopenable) sealed values do not open with this keyring (a key it lacks?): left as they were\n".utf8))
                return 3
            }
            if s.remaining > 0 {
                FileHandle.standardError.write(Data("tokenbroker: \(s.remaining) values are still under another key (busy rows, or a replica still sealing with an old key): run it again\n".utf8))
                return 3
            }
            return 0
        default:
            throw Arguments.Invalid(description: "usage: " + usage)
        }
    }

    static func render(current: String?, values: [String: Int], extra: [(String, String)] = []) -> String {
        JSONText.object([("current", current.map(JSONText.quote) ?? "null")] + extra
                        + [("values", JSONText.object(values.sorted { $0.key < $1.key }.map { ($0.key, String($0.value)) }))])
    }
}
