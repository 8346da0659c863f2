/// HeaderPass is one walk over a request's headers (MHD_get_connection_values_n): the front
/// door's framing checks, and the headers handlers may read copied out — the first of each
/// wanted name, lowercased — instead of looking each name up again (a C string and a scan per
/// name, on every request).
struct HeaderPass {
    var check = FrontDoor.HeaderCheck()
    private(set) var kept: [(name: String, value: String)] = []
    private let wanted: [(name: String, bytes: [UInt8])]

    init(wanted: [(name: String, bytes: [UInt8])]) {
        self.wanted = wanted
    }

    /// One header line, as HeaderCheck.add takes it.
    mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, valueLength: Int) {
        check.add(name: name, value: value, valueLength: valueLength)
        for w in wanted where w.bytes.count == name.count && Self.equalsLowercase(name, w.bytes) {
            if !kept.contains(where: { $0.name == w.name }) { kept.append((w.name, String(decoding: value, as: UTF8.self))) }
            return
        }
    }

    private static func equalsLowercase(_ bytes: UnsafeBufferPointer<UInt8>, _ lower: [UInt8]) -> Bool {
        for i in 0..<bytes.count {
            let b = bytes[i]
            if (b >= 0x41 && b <= 0x5a ? b + 32 : b) != lower[i] { return false }
        }
        return true
    }
}
