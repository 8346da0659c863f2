import BrokerCore
import Foundation
import Synchronization

/// PendingAnswers keeps IdP answers that arrived when their write could not be committed (the
/// database was down or restarting), so that a rotated refresh token is never lost:
/// they are written, through the refresh machine, as soon as the database is back. In memory
/// only: should this replica die meanwhile, the attempt stays recorded and is resolved by
/// another replica without presenting the token again.
///
/// Thread-safety: any thread.
final class PendingAnswers: Sendable {
    struct Answer: Sendable {
        let key: SessionKey
        let client: ClientRegistration
        let attempt: RefreshAttempt
        /// The refresh token presented (to introspect, should the outcome be ambiguous).
        let presented: String
        let sentAt: Date
        let outcome: RefreshOutcome
    }

    private let answers = Mutex<[SessionKey: Answer]>([:])

    func hold(_ a: Answer) { answers.withLock { $0[a.key] = a } }

    func take(_ key: SessionKey) -> Answer? { answers.withLock { $0.removeValue(forKey: key) } }

    func all() -> [Answer] { answers.withLock { Array($0.values) } }

    var count: Int { answers.withLock { $0.count } }
}
