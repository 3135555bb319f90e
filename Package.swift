// swift-tools-version:6.0
import PackageDescription

/// Every Swift target states its imports explicitly (see the README's Design section).
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

/// The request path's targets: a release build leaves out the run-time exclusivity checks (every
/// access to a class's stored property), which were 4 % of a cache hit and 9 % of `status`. Debug
/// builds, so every test, sanitizer and fuzz run, keep them.
let requestPathSettings: [SwiftSetting] =
    strictSettings + [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "httpdnsd",
    products: [
        .executable(name: "httpdnsd", targets: ["httpdnsd"]),
        .executable(name: "httpdnsctl", targets: ["httpdnsctl"]),
        .library(name: "httpdns", type: .dynamic, targets: ["HTTPDNSClientC"]),
    ],
    targets: [
        // C libraries from Debian, one owner each.
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CPSL", pkgConfig: "libpsl", providers: [.apt(["libpsl-dev"])]),
        .systemLibrary(name: "CIDN2", pkgConfig: "libidn2", providers: [.apt(["libidn2-dev"])]),
        // Headers only: their owners (HTTPDNSCurl, HTTPDNSRedis, HTTPDNSSodium) open the library with
        // dlopen on first use, so no pkgConfig (its Libs would link it) and no `link` in the modulemaps.
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // The header is included as <hiredis/hiredis.h>, so no -I is needed.
        .systemLibrary(name: "CHiredis", providers: [.apt(["libhiredis-dev"])]),
        .systemLibrary(name: "CSodium", providers: [.apt(["libsodium-dev"])]),
        // OpenSSL's libcrypto (the upstreams' HMAC, AES and DES), opened by HTTPDNSCrypto on first use.
        .systemLibrary(name: "CCrypto", providers: [.apt(["libssl-dev"])]),
        // GNU-only libc calls that the Glibc module hides (accept4, struct ucred, signalfd).
        .target(name: "CHTTPDNSShims", cSettings: [.define("_GNU_SOURCE")]),

        .target(name: "HTTPDNSProtocol", swiftSettings: requestPathSettings),
        // The one binary heap: the loop's timers (System) and the cache's expiries (Core).
        .target(name: "HTTPDNSCollections", swiftSettings: requestPathSettings),
        // The one URL parser (WHATWG for http, https, ws, wss): the standard library only, IDNA injected.
        .target(name: "HTTPDNSURL", swiftSettings: requestPathSettings),
        .target(name: "HTTPDNSIDNA", dependencies: ["CIDN2"], swiftSettings: strictSettings),
        .target(
            name: "HTTPDNSCore", dependencies: ["HTTPDNSProtocol", "HTTPDNSCollections", "HTTPDNSURL"],
            swiftSettings: requestPathSettings),
        .target(
            name: "HTTPDNSSystem", dependencies: ["CHTTPDNSShims", "HTTPDNSCollections"],
            swiftSettings: requestPathSettings),
        .target(name: "HTTPDNSSystemd", dependencies: ["CSystemd", "HTTPDNSSystem"], swiftSettings: strictSettings),
        .target(
            name: "HTTPDNSPSL", dependencies: ["CPSL", "HTTPDNSIDNA", "HTTPDNSCore"], swiftSettings: strictSettings),
        // The upstream HTTP client: plain http:// itself (Core's response parser), the rest through libcurl.
        .target(
            name: "HTTPDNSCurl", dependencies: ["CCurl", "HTTPDNSCore", "HTTPDNSSystem", "HTTPDNSURL"],
            swiftSettings: strictSettings),
        .target(name: "HTTPDNSSQLite", dependencies: ["CSQLite"], swiftSettings: strictSettings),
        // The daemon's state over SQLite: schema, stores, the store thread and group commit.
        .target(
            name: "HTTPDNSStore", dependencies: ["HTTPDNSProtocol", "HTTPDNSCore", "HTTPDNSSQLite", "HTTPDNSSystem"],
            swiftSettings: strictSettings),
        .target(name: "HTTPDNSRedis", dependencies: ["CHiredis", "HTTPDNSSystem"], swiftSettings: strictSettings),
        .target(name: "HTTPDNSSodium", dependencies: ["CSodium", "HTTPDNSSystem"], swiftSettings: strictSettings),
        .target(name: "HTTPDNSCrypto", dependencies: ["CCrypto", "HTTPDNSSystem"], swiftSettings: strictSettings),
        .target(
            name: "HTTPDNSFleet",
            dependencies: ["HTTPDNSProtocol", "HTTPDNSCore", "HTTPDNSSystem", "HTTPDNSRedis", "HTTPDNSSodium"],
            swiftSettings: strictSettings),
        .target(
            name: "HTTPDNSServer",
            dependencies: [
                "HTTPDNSProtocol", "HTTPDNSCore", "HTTPDNSSystem", "HTTPDNSSystemd",
                "HTTPDNSPSL", "HTTPDNSIDNA", "HTTPDNSCurl", "HTTPDNSStore", "HTTPDNSFleet", "HTTPDNSSodium",
                "HTTPDNSCrypto", "CHTTPDNSHostsMap",
            ],
            swiftSettings: requestPathSettings
        ),
        .executableTarget(
            name: "httpdnsd", dependencies: ["HTTPDNSCore", "HTTPDNSServer"], swiftSettings: strictSettings),
        .target(
            name: "HTTPDNSClient", dependencies: ["HTTPDNSProtocol", "HTTPDNSSystem", "HTTPDNSURL", "HTTPDNSIDNA"],
            swiftSettings: strictSettings),
        .executableTarget(
            name: "httpdnsctl", dependencies: ["HTTPDNSClient"],
            swiftSettings: strictSettings),
        .target(
            name: "HTTPDNSClientC",
            dependencies: ["HTTPDNSClient", "HTTPDNSSystem"],
            exclude: ["httpdns.map"],
            swiftSettings: strictSettings,
            linkerSettings: [
                .unsafeFlags([
                    "-Xlinker", "-soname=libhttpdns.so.0", "-static-stdlib",
                    "-Xlinker", "--version-script=Sources/HTTPDNSClientC/httpdns.map",
                ])
            ]
        ),
        // libnss_httpdns.so.2, the glibc NSS hosts module: plain C, no Swift runtime. SwiftPM compiles
        // it (warnings and all) but cannot link it as it must be: every SwiftPM product is linked by
        // swiftc, which always adds libswiftCore.so (NEEDED) and the toolchain's RUNPATH. So it has
        // no product here; packaging/build-nss links it with cc (SONAME, version script, libc only).
        .target(
            name: "nss_httpdns", dependencies: ["CHTTPDNSHostsMap"], exclude: ["nss_httpdns.map"],
            cSettings: [.define("_GNU_SOURCE")]),
        // The hosts map (httpdnsd(8), SHARED HOSTS MAP): its layout, SipHash, the module's reader and
        // the daemon's writer, in C so that both sides share one definition of the file.
        .target(name: "CHTTPDNSHostsMap", cSettings: [.define("_GNU_SOURCE")]),
        // Test processes name who sent a signal that ends them (SwiftPM says nothing then).
        .target(name: "CHTTPDNSTestSignals"),
        .target(
            name: "HTTPDNSTestSupport",
            dependencies: [
                "CHTTPDNSShims", "CHTTPDNSTestSignals", "HTTPDNSProtocol", "HTTPDNSCore", "HTTPDNSSystem",
                "HTTPDNSClient", "HTTPDNSRedis",
            ],
            swiftSettings: strictSettings
        ),

        .testTarget(
            name: "HTTPDNSURLTests",
            dependencies: ["HTTPDNSURL", "HTTPDNSIDNA", "HTTPDNSProtocol", "HTTPDNSTestSupport"],
            // Read by path from the source tree (as the cookie corpus is), not bundled.
            exclude: ["Resources"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "HTTPDNSProtocolTests", dependencies: ["HTTPDNSProtocol", "HTTPDNSTestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "HTTPDNSCoreTests",
            dependencies: [
                "HTTPDNSCore", "HTTPDNSCollections", "HTTPDNSPSL", "HTTPDNSIDNA", "HTTPDNSProtocol",
                "HTTPDNSTestSupport", "HTTPDNSCrypto",
            ],
            // The replay scenarios, read by path from the source tree (as HTTPDNSURLTests' are).
            exclude: ["Resources"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "HTTPDNSCurlTests", dependencies: ["HTTPDNSCurl", "HTTPDNSSystem", "HTTPDNSTestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "HTTPDNSSQLiteTests", dependencies: ["HTTPDNSSQLite", "HTTPDNSTestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "HTTPDNSStoreTests",
            dependencies: [
                "HTTPDNSStore", "HTTPDNSSQLite", "HTTPDNSCore", "HTTPDNSProtocol", "HTTPDNSSystem",
                "HTTPDNSTestSupport",
            ],
            swiftSettings: strictSettings),
        .testTarget(
            name: "HTTPDNSRedisTests", dependencies: ["HTTPDNSRedis", "HTTPDNSSystem", "HTTPDNSTestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "HTTPDNSSodiumTests", dependencies: ["HTTPDNSSodium", "HTTPDNSSystem", "HTTPDNSTestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "HTTPDNSCryptoTests", dependencies: ["HTTPDNSCrypto", "HTTPDNSTestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "HTTPDNSFleetTests",
            dependencies: [
                "HTTPDNSFleet", "HTTPDNSCore", "HTTPDNSProtocol", "HTTPDNSRedis", "HTTPDNSSodium", "HTTPDNSSystem",
                "HTTPDNSTestSupport",
            ],
            swiftSettings: strictSettings),
        .testTarget(
            name: "HTTPDNSClientTests",
            dependencies: ["HTTPDNSClient", "HTTPDNSProtocol", "HTTPDNSSystem", "HTTPDNSTestSupport", "httpdnsctl"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "NSSModuleTests",
            dependencies: ["HTTPDNSTestSupport", "HTTPDNSSystem", "HTTPDNSProtocol", "httpdnsd", "CHTTPDNSHostsMap"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "HTTPDNSServerTests",
            dependencies: [
                "HTTPDNSTestSupport", "HTTPDNSClient", "HTTPDNSCore", "HTTPDNSProtocol", "HTTPDNSRedis",
                "HTTPDNSServer", "HTTPDNSStore",
                "HTTPDNSSystem",
                "httpdnsd", "httpdnsctl",
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "HTTPDNSSystemTests", dependencies: ["HTTPDNSSystem", "HTTPDNSTestSupport"],
            swiftSettings: strictSettings),
    ]
)
