import BrokerCore
import Foundation

// wheel-bench: schedule + cancel throughput of the timer wheel on one thread, and its memory per
// timer with 1,000,000 timers pending. Prints one JSON object (read by bench/bench.py).

func rssBytes() -> Int {
    // A benchmark's memory figure: none (0) without /proc.
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
}

let n = 1_000_000
let origin = Date()
var rng = SystemRandomNumberGenerator()
let ticks = (0..<n).map { _ in Int64.random(in: 1...36_000, using: &rng) }   // within an hour at 100 ms

// Memory: 1,000,000 timers pending.
let before = rssBytes()
var wheel = TimerWheel<Int>(origin: origin, tickSeconds: 0.1)
var handles = [TimerWheel<Int>.Handle]()
handles.reserveCapacity(n)
let grown = rssBytes()
for i in 0..<n { handles.append(wheel.schedule(i, atTick: ticks[i])) }
let after = rssBytes()
let handleBytes = grown - before
let bytesPerTimer = Double(after - grown) / Double(n)

// Throughput: schedule + cancel pairs on the full wheel, one thread.
let rounds = 3
var best = 0.0
for _ in 0..<rounds {
    let start = DispatchTime.now().uptimeNanoseconds
    for i in 0..<n {
        wheel.cancel(handles[i])
        handles[i] = wheel.schedule(i, atTick: ticks[(i &* 7919) % n])
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    best = max(best, Double(2 * n) / seconds)
}
// Expiry: drain the hour.
let drainStart = DispatchTime.now().uptimeNanoseconds
var fired = 0
while wheel.count > 0 { fired += wheel.advance(toTick: wheel.current + 600).count }
let drainSeconds = Double(DispatchTime.now().uptimeNanoseconds - drainStart) / 1e9
precondition(fired == n)
print("{\"wheel_ops_per_s\": \(Int(best)), \"wheel_bytes_per_timer\": \(String(format: "%.1f", bytesPerTimer)), \"wheel_handle_array_bytes\": \(handleBytes), \"wheel_drain_1m_seconds\": \(String(format: "%.3f", drainSeconds))}")
