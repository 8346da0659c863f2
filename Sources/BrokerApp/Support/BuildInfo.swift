/// BuildInfo is the release compiled into this binary: `tokenbroker --version` prints it and
/// `/metrics` exports it as `tokenbroker_build_info{version="…"} 1`. Semantic versioning; each
/// release has its entry in CHANGELOG.md.
public enum BuildInfo {
    public static let version = "0.1.0"
}
