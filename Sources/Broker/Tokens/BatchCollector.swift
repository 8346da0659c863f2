import BrokerCore
import Synchronization

/// BatchCollector gathers a batch's results from whichever threads finish them, and completes
/// the batch once: when the last item is in, or when the batch's deadline expires it.
///
/// Thread-safety: any thread.
final class BatchCollector: Sendable {
    /// Stands for an item not answered yet; every one is replaced before `completion` runs.
    static let pending = Result<IssuedToken, BrokerError>.failure(.refreshBusy)
    private let state: Mutex<(results: [Result<IssuedToken, BrokerError>], waiting: Set<Int>, done: Bool)>
    private let completion: TokenService.BatchCompletion

    /// `waiting`: the items of `results` still to come (their placeholders are `pending`).
    init(_ results: [Result<IssuedToken, BrokerError>], waiting: [Int], completion: @escaping TokenService.BatchCompletion) {
        state = Mutex((results, Set(waiting), false))
        self.completion = completion
    }

    /// Item `i`'s answer; the last one completes the batch. After the batch completed: ignored.
    func set(_ i: Int, _ r: Result<IssuedToken, BrokerError>) {
        let done = state.withLock { s -> [Result<IssuedToken, BrokerError>]? in
            guard !s.done, s.waiting.remove(i) != nil else { return nil }
            s.results[i] = r
            guard s.waiting.isEmpty else { return nil }
            s.done = true
            return s.results
        }
        if let done { completion(done) }
    }

    /// The deadline: completes the batch with every item still waiting as `refresh_busy`.
    func expire() {
        let done = state.withLock { s -> [Result<IssuedToken, BrokerError>]? in
            guard !s.done else { return nil }
            s.done = true
            return s.results   // the waiting items hold `pending`, which is refresh_busy
        }
        if let done { completion(done) }
    }
}
