@testable import BrokerApp
import BrokerCore
import Testing

@Suite("Parse memo")
struct ParseMemoTests {
    final class Counter: @unchecked Sendable { var n = 0 }

    @Test("the same bytes are parsed once and answer what parsing them returned; other bytes are parsed")
    func remembers() throws {
        let memo = ParseMemo<Int>(capacity: 4, maxBytes: 8)
        let parses = Counter()
        let parse: ([UInt8]) throws -> Int = { parses.n += 1; return $0.count }
        #expect(try memo.value([1, 2, 3], parse: parse) == 3)
        #expect(try memo.value([1, 2, 3], parse: parse) == 3)
        #expect(parses.n == 1)
        #expect(try memo.value([1, 2], parse: parse) == 2 && parses.n == 2)
    }

    @Test("a failed parse is never kept, nor are inputs over the size bound; a full stripe starts over")
    func bounded() throws {
        let memo = ParseMemo<Int>(capacity: 2, maxBytes: 4)
        let parses = Counter()
        struct Bad: Error {}
        for _ in 0..<2 {
            #expect(throws: Bad.self) { try memo.value([9], parse: { _ in parses.n += 1; throw Bad() }) }
        }
        #expect(parses.n == 2)
        let count: ([UInt8]) throws -> Int = { parses.n += 1; return $0.count }
        _ = try memo.value([1, 2, 3, 4, 5], parse: count)
        _ = try memo.value([1, 2, 3, 4, 5], parse: count)
        #expect(parses.n == 4)
        // Capacity 2: a third input empties the stripe, so the first is parsed again.
        for input: [UInt8] in [[1], [2], [3], [1]] { _ = try memo.value(input, parse: count) }
        #expect(parses.n == 8)
    }
}
