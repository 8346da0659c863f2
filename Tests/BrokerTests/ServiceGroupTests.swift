@testable import Broker
import BrokerCore
import Foundation
import Synchronization
import Testing

@Suite("Service group: start in order, stop in reverse by one deadline")
struct ServiceGroupTests {
    final class Journal: Sendable {
        let lines = Mutex<[String]>([])
        func append(_ l: String) { lines.withLock { $0.append(l) } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// Records its start and stop in a shared journal; its stop takes `stopping` seconds.
    final class Recorder: Service {
        let name: String
        let stopping: TimeInterval
        let journal: Journal
        init(_ name: String, stopping: TimeInterval = 0, journal: Journal) {
            (self.name, self.stopping, self.journal) = (name, stopping, journal)
        }
        func start() { journal.append("start \(name)") }
        func stop(deadline: Date) {
            Thread.sleep(forTimeInterval: stopping)
            journal.append("stop \(name)")
        }
    }

    final class Events: Sendable {
        let all = Mutex<[ServiceGroup.Event]>([])
        var record: @Sendable (ServiceGroup.Event) -> Void { { e in self.all.withLock { $0.append(e) } } }
        var names: [String] {
            all.withLock { $0 }.map {
                switch $0 {
                case .started(let n): "started \(n)"
                case .stopped(let n, _): "stopped \(n)"
                case .overran(let n, _): "overran \(n)"
                }
            }
        }
    }

    @Test("services start in the order given and stop in reverse, each start and stop reported by name")
    func order() throws {
        let journal = Journal(), events = Events()
        let group = ServiceGroup(["feed", "executor", "engine"].map { Recorder($0, journal: journal) }, events: events.record)
        try group.start()
        group.stop(deadline: Date().addingTimeInterval(5))
        #expect(journal.all == ["start feed", "start executor", "start engine", "stop engine", "stop executor", "stop feed"])
        #expect(events.names == ["started feed", "started executor", "started engine", "stopped engine", "stopped executor", "stopped feed"])
        group.stop(deadline: Date().addingTimeInterval(5))   // a second stop stops nothing again
        #expect(journal.all.count == 6)
    }

    @Test("the services of one stage stop together: the stage lasts as long as its slowest, not their sum")
    func stageStopsTogether() throws {
        let journal = Journal(), events = Events()
        let listeners = (1...3).map { Recorder("listener \($0)", stopping: 0.4, journal: journal) as any Service }
        let group = ServiceGroup(stages: [[Recorder("engine", journal: journal)], listeners], events: events.record)
        try group.start()
        let began = Date()
        group.stop(deadline: Date().addingTimeInterval(5))
        #expect(Date().timeIntervalSince(began) < 1.0, "the listeners stopped one after another")
        #expect(journal.all.last == "stop engine", "the engine stopped before every listener had")
    }

    @Test("a service still stopping at the deadline is reported and abandoned; the rest are still stopped and the group returns by the deadline")
    func overrunIsAbandoned() throws {
        let journal = Journal(), events = Events()
        let group = ServiceGroup([Recorder("feed", journal: journal), Recorder("engine", stopping: 30, journal: journal)], events: events.record)
        try group.start()
        let began = Date()
        group.stop(deadline: Date().addingTimeInterval(0.3))
        let took = Date().timeIntervalSince(began)
        #expect(took >= 0.29 && took < 1.5, "the group waited \(took) s for a 0.3 s budget")
        #expect(events.names.suffix(2).first == "overran engine")
        // The feed is asked to stop although the budget is spent.
        let deadline = Date().addingTimeInterval(2)
        while !journal.all.contains("stop feed"), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(journal.all.contains("stop feed") && !journal.all.contains("stop engine"))
    }

    @Test("a service that fails to start is thrown; only the stages started are stopped")
    func failedStart() {
        struct Refused: Error {}
        final class Refusing: Service {
            let name = "listener"
            func start() throws { throw Refused() }
            func stop(deadline: Date) {}
        }
        let journal = Journal(), events = Events()
        let group = ServiceGroup([Recorder("feed", journal: journal), Refusing(), Recorder("engine", journal: journal)], events: events.record)
        #expect(throws: Refused.self) { try group.start() }
        group.stop(deadline: Date().addingTimeInterval(1))
        #expect(journal.all == ["start feed", "stop feed"])
    }
}
