/// RecentDictionary is a dictionary that remembers where the key it last found lives: the same
/// key asked for again is compared with that entry's key, not hashed. A worker fetching one
/// session's token over and over asks the hand-out's buffers (the audit tally, the usage mark,
/// the parsed body) for the same key every time; hashing it was most of what they cost.
///
/// The remembered position is forgotten on every insertion and removal (the dictionary's
/// indexes do not survive them); changing a value in place keeps it.
///
/// Inlinable, so that it is specialized for its key where it is used (a generic dictionary
/// lookup across modules cost more than the hash it saves).
///
/// Not thread-safe: it lives inside a lock (PerThread's stripes).
public struct RecentDictionary<Key: Hashable, Value> {
    @usableFromInline var dictionary: [Key: Value] = [:]
    /// The entries (for a drain).
    @inlinable public var storage: [Key: Value] { dictionary }
    @usableFromInline var recent: Dictionary<Key, Value>.Index? = nil

    @inlinable public init() {}

    @inlinable public var count: Int { dictionary.count }
    @inlinable public var isEmpty: Bool { dictionary.isEmpty }

    /// Where `key` is, or nil; found by comparison when it is the key found last.
    @inlinable public mutating func index(forKey key: Key) -> Dictionary<Key, Value>.Index? {
        if let i = recent, dictionary.keys[i] == key { return i }
        let i = dictionary.index(forKey: key)
        if i != nil { recent = i }
        return i
    }

    /// The value at a position `index(forKey:)` returned (valid until the next insertion or removal).
    @inlinable public subscript(at i: Dictionary<Key, Value>.Index) -> Value {
        get { dictionary.values[i] }
        set { dictionary.values[i] = newValue }
    }

    /// The value for `key`, hashed unless it is the key found last.
    @inlinable public mutating func value(forKey key: Key) -> Value? {
        index(forKey: key).map { dictionary.values[$0] }
    }

    /// Adds or replaces the value for `key`.
    @inlinable public mutating func set(_ key: Key, _ value: Value) {
        recent = nil
        dictionary[key] = value
    }

    @inlinable public mutating func removeAll(keepingCapacity: Bool = false) {
        recent = nil
        dictionary.removeAll(keepingCapacity: keepingCapacity)
    }
}

extension RecentDictionary: Sendable where Key: Sendable, Value: Sendable {}
