import Synchronization

/// Once hands a result to a completion exactly once, whichever of several racing paths (the
/// flight's end, the caller's deadline) gets there first.
///
/// Thread-safety: any thread.
final class Once<Value: Sendable>: Sendable {
    private let completion: Mutex<(@Sendable (Value) -> Void)?>

    init(_ completion: @escaping @Sendable (Value) -> Void) { self.completion = Mutex(completion) }

    /// The completion, to the first caller only (nil to every later one): the winner alone
    /// computes, audits and delivers its result.
    func take() -> (@Sendable (Value) -> Void)? {
        completion.withLock { c in
            defer { c = nil }
            return c
        }
    }
}
