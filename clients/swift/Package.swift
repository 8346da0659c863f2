// swift-tools-version:6.0
// A worker's client of tokenbroker: cached, single-flight access tokens with typed errors.
// Foundation only; its tests run against a live broker (scripts/clients.sh).
import PackageDescription

let package = Package(
    name: "TokenBrokerClient",
    products: [.library(name: "TokenBrokerClient", targets: ["TokenBrokerClient"])],
    targets: [
        .target(name: "TokenBrokerClient"),
        .testTarget(name: "TokenBrokerClientTests", dependencies: ["TokenBrokerClient"]),
    ]
)
