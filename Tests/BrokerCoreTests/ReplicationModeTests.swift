import BrokerCore
import Testing

@Suite("Replication mode")
struct ReplicationModeTests {
    typealias Standby = ReplicationReading.Standby

    static func reading(_ commit: String = "on", names: String = "", _ standbys: [Standby] = []) -> ReplicationReading {
        ReplicationReading(synchronousCommit: commit, synchronousStandbyNames: names, standbys: standbys)
    }

    @Test("commits that wait for a connected synchronous or quorum standby are synchronous, counted")
    func synchronous() {
        #expect(ReplicationMode.of(Self.reading(names: "*", [Standby(name: "b", syncState: "sync")])) == (.synchronous, 1))
        #expect(ReplicationMode.of(Self.reading("remote_apply", names: "ANY 1 (b, c)",
                                                [Standby(name: "b", syncState: "quorum"), Standby(name: "c", syncState: "quorum")])) == (.synchronous, 2))
        #expect(ReplicationMode.of(Self.reading(names: "FIRST 1 (b, c)",
                                                [Standby(name: "b", syncState: "sync"), Standby(name: "c", syncState: "potential")])) == (.synchronous, 1))
    }

    @Test("standbys whose acknowledgement no commit waits for are asynchronous: no names, or synchronous_commit local or off")
    func asynchronous() {
        #expect(ReplicationMode.of(Self.reading("on", [Standby(name: "b", syncState: "async")])) == (.asynchronous, 0))
        #expect(ReplicationMode.of(Self.reading("local", names: "*", [Standby(name: "b", syncState: "sync")])) == (.asynchronous, 0))
        #expect(ReplicationMode.of(Self.reading("off", names: "b", [Standby(name: "b", syncState: "sync")])) == (.asynchronous, 0))
    }

    @Test("no standby: standalone, or writes waiting for one when names are set")
    func noStandby() {
        #expect(ReplicationMode.of(Self.reading()) == (.standalone, 0))
        #expect(ReplicationMode.of(Self.reading(names: "b")) == (.synchronousUnavailable, 0))
        #expect(ReplicationMode.of(Self.reading(names: "b", [Standby(name: "c", syncState: "async")])) == (.synchronousUnavailable, 0))
    }

    @Test("standbys the role may not see in full: unknown when commits wait, asynchronous when they cannot")
    func hidden() {
        let hidden = [Standby(name: nil, syncState: nil)]
        #expect(ReplicationMode.of(Self.reading(names: "*", hidden)).mode == .unknown)
        #expect(ReplicationMode.of(Self.reading(names: "*", hidden)).synchronousStandbys == nil)
        #expect(ReplicationMode.of(Self.reading("on", hidden)) == (.asynchronous, 0))
    }

    @Test("a report for the first reading and for each change of mode or synchronous count, none while nothing changes")
    func watchReportsChanges() {
        var watch = ReplicationWatch()
        let sync = Self.reading(names: "*", [Standby(name: "b", syncState: "sync")])
        let first = watch.observe(sync)
        #expect(first?.mode == .synchronous && first?.previous == nil && first?.lossy == false)
        #expect(watch.observe(sync) == nil)
        // The standby's name changes (a new standby took its place): same mode, same count.
        #expect(watch.observe(Self.reading(names: "*", [Standby(name: "c", syncState: "sync")])) == nil)
        let two = watch.observe(Self.reading(names: "*", [Standby(name: "b", syncState: "sync"), Standby(name: "c", syncState: "quorum")]))
        #expect(two?.synchronousStandbys == 2 && two?.previous == .synchronous)
        // A failover to a primary nobody replicates synchronously.
        let lost = watch.observe(Self.reading("on", [Standby(name: "b", syncState: "async")]))
        #expect(lost?.mode == .asynchronous && lost?.previous == .synchronous && lost?.lossy == true)
        #expect(watch.last?.mode == .asynchronous)
    }
}
