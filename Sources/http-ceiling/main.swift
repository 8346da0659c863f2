import BrokerHTTP
import Foundation

// http-ceiling: the benchmark's reference for the broker's own HTTP layer (make bench). The
// broker's MHDServer (front door, header pass, request ids, the same daemon options) with a
// handler that answers every request with the same bytes and the token response's headers:
// what is left between it and the token fetch is routing, the API key, the cache and the
// rendering. Not part of the service. Usage: http-ceiling PORT THREADS FILE

let args = CommandLine.arguments
guard args.count == 4, let port = UInt16(args[1]), let threads = Int(args[2]),
      let body = FileManager.default.contents(atPath: args[3]) else {
    FileHandle.standardError.write(Data("usage: http-ceiling PORT THREADS FILE\n".utf8))
    exit(2)
}
let bytes = [UInt8](body)
let server = MHDServer(config: HTTPServerConfig(host: "127.0.0.1", port: port, threads: threads)) { _ in
    .now(HTTPResponse.json(200, bytes).uncacheable())
}
do { try server.start() } catch {
    FileHandle.standardError.write(Data("http-ceiling: \(error)\n".utf8))
    exit(1)
}
FileHandle.standardOutput.write(Data("listening on \(port)\n".utf8))
signal(SIGTERM, SIG_IGN)
let term = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .main)
term.setEventHandler { server.stop(grace: 0); exit(0) }
term.resume()
dispatchMain()
