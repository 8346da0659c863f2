import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs `bash script arg` and waits for it with waitpid (Foundation's Process can miss the
/// exit of a script whose child daemonizes, as pg_ctl start does).
func shell(_ script: String, _ arg: String) throws -> Int32 {
    var pid: pid_t = 0
    let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/bash"), strdup(script), strdup(arg), nil]
    defer { for a in argv { free(a) } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    guard posix_spawn(&pid, "/bin/bash", &actions, nil, argv, environ) == 0 else { throw TestEnv.Missing(description: "cannot run \(script)") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    return (status >> 8) & 0xff
}

/// The private cluster's control script (scripts/pg.sh) when the tests may stop and start it.
let pgControl = ProcessInfo.processInfo.environment["TOKENBROKER_TEST_PG_CONTROL"]
