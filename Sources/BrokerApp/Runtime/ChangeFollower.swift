import BrokerCore
import BrokerPostgres
import Foundation

/// ChangeFollower is the change feed as a service: from its start, changes any replica publishes
/// reach this replica's caches and refresh engine; its stop ends the listening connection.
final class ChangeFollower: Service {
    let name = "change-feed"
    private let feed: PostgresChangeFeed
    private let handler: @Sendable (Change) -> Void

    init(feed: PostgresChangeFeed, handler: @escaping @Sendable (Change) -> Void) {
        (self.feed, self.handler) = (feed, handler)
    }

    func start() { feed.subscribe(handler) }

    func stop(deadline: Date) { feed.stop() }
}
