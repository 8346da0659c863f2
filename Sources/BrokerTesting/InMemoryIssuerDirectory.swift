import BrokerCore
import Foundation
import Synchronization

/// InMemoryIssuerDirectory plays an issuer whose discovery document changes under a cache:
/// `publish` changes what the IdP says, while `metadata` keeps answering the copy the last read
/// cached (as IssuerMetadataCache does within its max age) until `current` reads again or a
/// `reread` drops it. `reread` has IssuerMetadataCache's budget (one per 30 s by `now`), so that
/// tests see what spending it costs. `reads` counts the documents fetched from the "IdP".
///
/// Thread-safety: any thread.
public final class InMemoryIssuerDirectory: IssuerDirectory {
    private struct State {
        var published: IssuerMetadata
        var cached: IssuerMetadata?
        var lastReread: Date?
        var reads = 0

        mutating func fetch() -> IssuerMetadata {
            reads += 1
            cached = published
            return published
        }
    }
    private let state: Mutex<State>

    public init(published: IssuerMetadata) { state = Mutex(State(published: published)) }

    /// The IdP changes its document; the cached copy stays until read again.
    public func publish(_ m: IssuerMetadata) { state.withLock { $0.published = m } }

    /// Documents fetched from the IdP so far.
    public var reads: Int { state.withLock { $0.reads } }

    public func metadata(_ source: MetadataSource, trustAnchors: String?, now: Date) throws(TokenEndpointError) -> IssuerMetadata {
        state.withLock { s in s.cached ?? s.fetch() }
    }

    public func verify(_ source: MetadataSource, trustAnchors: String?) throws(TokenEndpointError) -> IssuerMetadata {
        state.withLock { s in
            s.reads += 1
            return s.published
        }
    }

    public func current(_ source: MetadataSource, trustAnchors: String?, now: Date) throws(TokenEndpointError) -> IssuerMetadata {
        state.withLock { $0.fetch() }
    }

    public func reread(_ source: MetadataSource, trustAnchors: String?, now: Date) -> Bool {
        state.withLock { s in
            if let last = s.lastReread, now.timeIntervalSince(last) < 30 { return false }
            s.lastReread = now
            s.cached = nil
            return true
        }
    }
}
