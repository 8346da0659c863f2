import Foundation

/// CurrentTrace is the trace of the request a thread works for, so that the IdP calls it makes
/// deep in a service carry `traceparent` without every signature naming it. Set around a
/// request's work (`with`) and carried across the executor's hop (BlockingExecutor.submit);
/// timer-driven work has none and sends none. Like PerThread, it lives in the core because
/// the services and the adapters share it; it does no I/O and owns no thread.
public enum CurrentTrace {
    private final class Box { let trace: TraceContext; init(_ t: TraceContext) { trace = t } }
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0)
        return key
    }()

    public static var value: TraceContext? {
        pthread_getspecific(key).map { Unmanaged<Box>.fromOpaque($0).takeUnretainedValue().trace }
    }

    /// Runs `work` with `trace` (nil: none) as this thread's current trace, then restores the one before.
    public static func with<T>(_ trace: TraceContext?, _ work: () throws -> T) rethrows -> T {
        let before = pthread_getspecific(key)
        let box = trace.map { Unmanaged.passRetained(Box($0)) }
        pthread_setspecific(key, box?.toOpaque())
        defer {
            pthread_setspecific(key, before)
            box?.release()
        }
        return try work()
    }
}
