import BrokerApp
import Foundation

let status = CLI.main(Array(CommandLine.arguments.dropFirst()))
// Standard output is flushed, then the process ends without running the C libraries'
// destructors under threads that may still be in them (see Serve).
fflush(nil)
_exit(status)
