/// RouteParameters are a matched route's captures, by name, in the pattern's order.
///
/// A route captures one or two segments: a short array searched in order costs less than a
/// dictionary, which hashed every name once to fill it and again for every read (a tenth of
/// a routed request's CPU in a profile of the token hand-out).
public struct RouteParameters: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    private var pairs: [(name: String, value: String)]

    public init() { pairs = [] }

    init(capacity: Int) {
        pairs = []
        pairs.reserveCapacity(capacity)
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        pairs = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The value captured as `name`; setting replaces it, or adds it when it was not captured.
    public subscript(name: String) -> String? {
        get { pairs.first { $0.name == name }?.value }
        set {
            if let i = pairs.firstIndex(where: { $0.name == name }) {
                if let newValue { pairs[i].value = newValue } else { pairs.remove(at: i) }
            } else if let newValue {
                pairs.append((name, newValue))
            }
        }
    }

    public var isEmpty: Bool { pairs.isEmpty }

    mutating func append(_ name: String, _ value: String) { pairs.append((name, value)) }

    /// The same names with the same values, in whatever order.
    public static func == (a: RouteParameters, b: RouteParameters) -> Bool {
        a.pairs.count == b.pairs.count && a.pairs.allSatisfy { b[$0.name] == $0.value }
    }
}
