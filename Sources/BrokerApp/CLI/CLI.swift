import Broker
import BrokerCore
import BrokerCrypto
import BrokerHTTP
import Foundation

/// CLI is the `tokenbroker` command (spec §9). Exit status: 0 success, 1 failure at run time,
/// 2 bad usage or configuration. Errors go to stderr as one sentence; stdout carries only the
/// requested output (a new API key is printed alone so that scripts can capture it).
public enum CLI {
    static let usage = """
        usage: tokenbroker <command> [options]

          serve                      run the HTTP API (refuses an unmigrated database)
          migrate                    apply the SQL migrations in sql/ (safe to run from several replicas)
          tenant put ID --name NAME  create or rename a tenant
          tenant list                list tenants
          client put --tenant T --id C --issuer URL --client-id ID --auth-method M --redirect-uri URL
                     --scopes "openid offline_access" [--client-secret-file F] [--redirect-after-allowed URL]...
                     [--min-ttl S] [--lead-seconds S] [--jitter-seconds S]
                                     create or replace a client registration (the secret is read from
                                     the file, or from TOKENBROKER_CLIENT_SECRET)
          apikey create --name N --role R [--role R]... [--tenant T]...
                                     create an API key (all tenants when no --tenant); prints only the key
          apikey revoke ID           revoke an API key
          sealing-key generate [--id ID]
                                     print a new random AES-256 sealing key entry (id:base64)
          signout --tenant T [--subject S] [--client C] [--created-before TIME] [--idle-since TIME]
                  [--all] [--dry-run] [--wait]
                                     bulk sign-out through the API (for cron: admin key from
                                     --key-file or TOKENBROKER_API_KEY, API at --url or TOKENBROKER_URL);
                                     exit 0 all revoked, 3 some failed or IdP-pending, 2 could not run
          routes                     print the HTTP route table (METHOD PATTERN), as docs/openapi.yaml lists it

        Every command but sealing-key reads the configuration (see README): DATABASE_URL,
        TOKENBROKER_SEALING_KEYS or TOKENBROKER_SEALING_KEY_FILE, ... Pass --config FILE for a
        file of NAME=value lines.
        """

    public static func main(_ argv: [String]) -> Int32 {
        guard let command = argv.first else {
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            return 2
        }
        // signout talks to the API, not the database, and has flags of its own.
        if command == "signout" { return SignoutCommand.run(Array(argv.dropFirst())) }
        do {
            let args = try Arguments(Array(argv.dropFirst()))
            switch command {
            case "help", "--help", "-h":
                print(usage)
                return 0
            case "sealing-key":
                guard args.positionals.first == "generate" else { throw Arguments.Invalid(description: "usage: tokenbroker sealing-key generate [--id ID]") }
                print(SealingKeys.generate(id: args.value("id") ?? "k1"))
                return 0
            default:
                break
            }
            let sealing = ["serve", "client"].contains(command)
            let config = try BrokerConfig.load(try BrokerConfig.environment(configFile: args.value("config")), needsSealingKeys: sealing)
            let logger = Logger(level: config.logLevel)
            let runtime = try BrokerRuntime(config: config, logger: logger)
            switch command {
            case "serve": return try Serve.run(runtime)
            case "migrate":
                let applied = try runtime.migrate()
                logger.info("migrated", ("applied", applied.map(String.init).joined(separator: ",")))
                return 0
            case "routes":
                for r in Routes.router(runtime).table { print("\(r.method) \(r.pattern)") }
                return 0
            case "tenant": return try Commands.tenant(args, runtime)
            case "client": return try Commands.client(args, runtime)
            case "apikey": return try Commands.apikey(args, runtime)
            default:
                throw Arguments.Invalid(description: "unknown command '\(command)' (try: tokenbroker help)")
            }
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
