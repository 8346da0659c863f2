// swift-tools-version:6.0
// Copyright 2026 the tokenbroker authors
//
// Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file
// except in compliance with the License. You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software distributed under the
// License is distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND,
// either express or implied. See the License for the specific language governing permissions
// and limitations under the License.
// tokenbroker: one target per seam (see style.md). The pure core imports no C; adapters import
// the core and their own C library, never each other; BrokerApp is the only composition root.
import PackageDescription

let package = Package(
    name: "tokenbroker",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tokenbroker", targets: ["tokenbroker"]),
        .executable(name: "dev-idp", targets: ["dev-idp"]),
    ],
    targets: [
        // C libraries from Debian.
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // curl_easy_setopt is C-variadic; this shim performs a whole exchange (buffered, or streamed
        // through callbacks) with typed arguments.
        .target(name: "CCurlShim", dependencies: ["CCurl", "COpenSSL"]),
        // simdjson (Debian's libsimdjson-dev) is C++: this target gives it a C face
        // (tb_simdjson.h) that Swift imports, and links it. Its simdjson.pc carries a -D flag
        // SwiftPM refuses, hence no system-library target.
        .target(name: "CSimdJSONShim", linkerSettings: [.linkedLibrary("simdjson")]),
        // MHD_start_daemon is C-variadic; this shim calls it with typed arguments.
        // GnuTLS, as Debian's libmicrohttpd uses it: client certificates of TLS listeners.
        .systemLibrary(name: "CGnuTLS", pkgConfig: "gnutls", providers: [.apt(["libgnutls28-dev"])]),
        .target(name: "CMicroHTTPDStart", dependencies: ["CMicroHTTPD", "CGnuTLS"]),

        // Pure core: model, policies, decisions, protocols, errors. No C, no I/O.
        .target(name: "BrokerCore"),
        // Services: the token path, single-flight, caches. Talk to the world through core protocols.
        .target(name: "Broker", dependencies: ["BrokerCore"]),

        // Adapters.
        .target(name: "BrokerCrypto", dependencies: ["BrokerCore", "COpenSSL"]),
        .target(name: "BrokerPostgres", dependencies: ["BrokerCore", "CLibPQ"]),
        .target(name: "BrokerHTTP", dependencies: ["BrokerCore", "CMicroHTTPD", "CMicroHTTPDStart"]),
        .target(name: "BrokerOIDC", dependencies: ["BrokerCore", "CCurlShim"]),
        .target(name: "BrokerJSON", dependencies: ["BrokerCore", "CSimdJSONShim"]),

        // Composition root and the one broker executable.
        .target(name: "BrokerApp", dependencies: ["BrokerCore", "Broker", "BrokerCrypto", "BrokerPostgres", "BrokerHTTP", "BrokerOIDC", "BrokerJSON"]),
        .executableTarget(name: "tokenbroker", dependencies: ["BrokerApp"]),

        // The development OpenID provider: its own executable, never linked into the broker.
        .target(name: "DevIdP", dependencies: ["BrokerCore", "BrokerHTTP", "BrokerCrypto"]),
        .executableTarget(name: "dev-idp", dependencies: ["DevIdP", "BrokerHTTP"]),

        // Benchmarks (make bench): the timer wheel; ID-token verification.
        .executableTarget(name: "wheel-bench", dependencies: ["BrokerCore"]),
        .executableTarget(name: "policy-bench", dependencies: ["BrokerCore"]),
        // Benchmark of ID-token verification (make bench).
        .executableTarget(name: "jose-bench", dependencies: ["Broker", "BrokerCore", "BrokerCrypto"]),
        // References for the token fetch (make bench): libmicrohttpd answering constant bytes,
        // in C, and the broker's HTTP layer answering them.
        .executableTarget(name: "mhd-constant", dependencies: ["CMicroHTTPD"]),
        .executableTarget(name: "http-ceiling", dependencies: ["BrokerHTTP"]),
        // How long each migration keeps writers of sessions waiting on a large table (make test,
        // make bench).
        .executableTarget(name: "migration-locks", dependencies: ["BrokerPostgres"]),

        // Fakes and the process harness for tests.
        .target(name: "BrokerTesting", dependencies: ["BrokerCore"]),

        .testTarget(name: "BrokerCoreTests", dependencies: ["BrokerCore"]),
        .testTarget(name: "BrokerTests", dependencies: ["Broker", "BrokerCore", "BrokerTesting"]),
        .testTarget(name: "AdapterTests", dependencies: ["BrokerCrypto", "BrokerOIDC", "BrokerPostgres", "BrokerHTTP", "BrokerJSON", "BrokerCore", "Broker", "BrokerApp", "BrokerTesting"]),
        .testTarget(name: "IntegrationTests", dependencies: ["BrokerCore", "BrokerCrypto"]),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
