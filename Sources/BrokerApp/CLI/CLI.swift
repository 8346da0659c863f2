import Broker
import BrokerCore
import BrokerCrypto
import BrokerHTTP
import Foundation

/// CLI is the `tokenbroker` command. Exit status: 0 success, 1 failure at run time,
/// 2 bad usage or configuration. Errors go to stderr as one sentence; stdout carries only the
/// requested output (a new API key is printed alone so that scripts can capture it).
public enum CLI {
    /// The release this binary is (`tokenbroker --version`).
    static var version: String { BuildInfo.version }

    static var usage: String {
        "usage: tokenbroker <command> [options]   (tokenbroker <command> --help for one command)\n\n"
            + CommandSpec.all.keys.sorted().map { "  " + CommandSpec.all[$0]!.usage.replacingOccurrences(of: "\n", with: "\n  ") }
            .joined(separator: "\n")
            + """

              tokenbroker --version

            Every command but sealing-key generate, health and signout reads the configuration: DATABASE_URL,
            TOKENBROKER_SEALING_KEYS or TOKENBROKER_SEALING_KEY_FILE, ... (tokenbroker serve --help lists every
            variable; docs/reference/configuration.md explains them). Pass --config FILE for a file of NAME=value
            lines. Exit 0 success, 1 failure at run time, 2 bad usage or configuration (the message names the
            option or variable). signout talks to the API: exit 0 all revoked, 3 some failed or IdP-pending,
            2 could not run.
            """
    }

    public static func main(_ argv: [String]) -> Int32 {
        var argv = argv
        // `--config FILE` may come before the command as well as after it.
        if argv.count >= 3, argv[0] == "--config" { argv = [argv[2], "--config", argv[1]] + argv[3...] }
        guard let command = argv.first else { return fail(usage, 2) }
        switch command {
        case "help", "--help", "-h":
            print(usage)
            return 0
        case "version", "--version":
            print("tokenbroker \(version)")
            return 0
        default:
            break
        }
        // Known before anything is read: a bogus command is a usage error, not "DATABASE_URL is not set".
        guard let spec = CommandSpec.all[command] else { return fail("unknown command '\(command)'\n" + usage, 2) }
        do {
            let args = try Arguments(Array(argv.dropFirst()), spec)
            switch command {
            case "signout": return SignoutCommand.run(args)
            case "sealing-key" where args.positionals == ["generate"]: return try SealingKeyCommand.generate(args)
            case "health": return HealthCommand.run(args)
            default:
                break
            }
            let sealing = ["serve", "client"].contains(command) || (command == "sealing-key" && args.positionals == ["reseal"])
            let config = try BrokerConfig.load(try BrokerConfig.environment(configFile: args.value("config")), needsSealingKeys: sealing)
            let logger = Logger(level: config.logLevel)
            let runtime = try BrokerRuntime(config: config, logger: logger)
            switch command {
            case "serve": return try Serve.run(runtime)
            case "migrate" where args.positionals == ["status"]:
                let (applied, pending) = try runtime.migrationStatus()
                print(JSONText.object([("current", pending.isEmpty ? "true" : "false"), ("applied", JSONText.array(applied.map(String.init))),
                                       ("pending", JSONText.array(pending.map(String.init)))]))
                return pending.isEmpty ? 0 : 3
            case "migrate":
                guard args.positionals.isEmpty else {
                    throw Arguments.Invalid(description: "unexpected argument '\(args.positionals[0])'\nusage: " + spec.usage)
                }
                let applied = try runtime.migrate()
                logger.info("migrated", ("applied", applied.map(String.init).joined(separator: ",")))
                return 0
            case "routes":
                for r in Routes.router(runtime).table { print("\(r.method) \(r.pattern)") }
                return 0
            case "purge":
                let deleted = try runtime.retention.run()
                print(Render.retention(deleted, ages: runtime.retention.ages))
                return 0
            case "sealing-key": return try SealingKeyCommand.run(args, runtime)
            case "tenant": return try Commands.tenant(args, runtime)
            case "client": return try Commands.client(args, runtime)
            default: return try Commands.apikey(args, runtime)
            }
        } catch let h as Arguments.Help {
            print(h.usage)
            return 0
        } catch let e as Arguments.Invalid {
            return fail(e.description, 2)
        } catch let e as BrokerConfig.Invalid {
            return fail("configuration: \(e.description)", 2)
        } catch let e as BrokerError {
            return fail("\(e.code): \(e.message)", 1)
        } catch {
            return fail(String(describing: error), 1)
        }
    }

    static func fail(_ message: String, _ status: Int32) -> Int32 {
        FileHandle.standardError.write(Data("tokenbroker: \(message)\n".utf8))
        return status
    }
}
