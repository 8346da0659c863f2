/// HeaderPass is one walk over a request's headers (MHD_get_connection_values_n): the front
/// door's framing checks, and the headers handlers may read copied out — the first of each
/// wanted name, lowercased — instead of looking each name up again (a C string and a scan per
/// name, on every request).
struct HeaderPass {
    var check = FrontDoor.HeaderCheck()
    private(set) var kept: [(name: String, value: String)] = []
    /// Every header, lowercase names, in order: only when `collectAll` (streamed routes).
    var collectAll = false
    private(set) var all: [(name: String, value: String)] = []
    private let wanted: [(name: String, bytes: [UInt8])]

    init(wanted: [(name: String, bytes: [UInt8])]) {
        self.wanted = wanted
        kept.reserveCapacity(wanted.count)   // filled without regrowing
    }

    /// One header line, as HeaderCheck.add takes it.
    mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, valueLength: Int) {
        check.add(name: name, value: value, valueLength: valueLength)
        if collectAll { all.append((String(decoding: name, as: UTF8.self).lowercased(), String(decoding: value, as: UTF8.self))) }
        for w in wanted where w.bytes.withUnsafeBufferPointer({ FrontDoor.equalsLowercase(name, $0) }) {
            if !kept.contains(where: { $0.name == w.name }) { kept.append((w.name, String(decoding: value, as: UTF8.self))) }
            return
        }
    }
}
