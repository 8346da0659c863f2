/// ResealBatch is what one re-sealing step did, and where the next one starts.
public struct ResealBatch: Sendable, Equatable {
    /// A position in the walk over the sealed columns: a column's index and a row's key.
    public struct Cursor: Sendable, Equatable {
        public var column: Int
        public var key: [String]
        public init(column: Int, key: [String]) {
            self.column = column
            self.key = key
        }
    }

    public var resealed: Int
    /// Values under a key this keyring lacks, or that do not open: left as they are.
    public var unopenable: Int
    /// Nil when the walk is over.
    public var next: Cursor?

    public init(resealed: Int, unopenable: Int, next: Cursor?) {
        self.resealed = resealed
        self.unopenable = unopenable
        self.next = next
    }
}
