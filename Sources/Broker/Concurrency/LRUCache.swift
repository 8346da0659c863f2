/// LRUCache keeps at most `capacity` values and, when full, evicts the one used least recently:
/// a flood of new keys pushes out only what nobody asked for since. Lookups, inserts and
/// evictions are O(1) (a dictionary into a doubly linked list kept in an array).
///
/// Not thread-safe: callers hold it in a Mutex.
struct LRUCache<Key: Hashable, Value> {
    private struct Node {
        var key: Key
        var value: Value
        var newer: Int
        var older: Int
    }

    let capacity: Int
    private var index: [Key: Int] = [:]
    private var nodes: [Node] = []
    /// Most and least recently used node, -1 when empty.
    private var newest = -1
    private var oldest = -1
    /// Slots of removed values, reused first.
    private var free: [Int] = []

    init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
    }

    var count: Int { index.count }

    /// The value, marked as just used.
    mutating func get(_ key: Key) -> Value? {
        guard let i = index[key] else { return nil }
        touch(i)
        return nodes[i].value
    }

    /// The value, its place in the order unchanged (readers sharing a lock use this).
    func peek(_ key: Key) -> Value? { index[key].map { nodes[$0].value } }

    /// Inserts or replaces, evicting the least recently used value when full; returns the value
    /// it displaced (the one replaced, or the one evicted with its key).
    @discardableResult
    mutating func set(_ key: Key, _ value: Value) -> (key: Key, value: Value)? {
        if let i = index[key] {
            let old = nodes[i].value
            nodes[i].value = value
            touch(i)
            return (key, old)
        }
        let node = Node(key: key, value: value, newer: -1, older: -1)
        let i: Int
        var evicted: (key: Key, value: Value)?
        if let f = free.popLast() {
            i = f
            nodes[i] = node
        } else if nodes.count < capacity {
            i = nodes.count
            nodes.append(node)
        } else {
            i = oldest
            unlink(i)
            index.removeValue(forKey: nodes[i].key)
            evicted = (nodes[i].key, nodes[i].value)
            nodes[i] = node
        }
        index[key] = i
        pushNewest(i)
        return evicted
    }

    /// Removes the key's value and returns it; its slot is reused by the next insert.
    @discardableResult
    mutating func remove(_ key: Key) -> Value? {
        guard let i = index.removeValue(forKey: key) else { return nil }
        unlink(i)
        free.append(i)
        return nodes[i].value
    }

    mutating func removeAll() {
        index.removeAll(keepingCapacity: true)
        nodes.removeAll(keepingCapacity: true)
        free.removeAll()
        newest = -1
        oldest = -1
    }

    /// Every key with its value, in no particular order.
    var entries: [(key: Key, value: Value)] { index.map { ($0.key, nodes[$0.value].value) } }

    private mutating func touch(_ i: Int) {
        guard i != newest else { return }
        unlink(i)
        pushNewest(i)
    }

    private mutating func unlink(_ i: Int) {
        let n = nodes[i]
        if n.newer >= 0 { nodes[n.newer].older = n.older } else { newest = n.older }
        if n.older >= 0 { nodes[n.older].newer = n.newer } else { oldest = n.newer }
        nodes[i].newer = -1
        nodes[i].older = -1
    }

    private mutating func pushNewest(_ i: Int) {
        nodes[i].older = newest
        nodes[i].newer = -1
        if newest >= 0 { nodes[newest].newer = i }
        newest = i
        if oldest < 0 { oldest = i }
    }
}
