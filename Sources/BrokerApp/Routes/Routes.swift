import BrokerHTTP

/// Routes is the whole route table; `docs/openapi.yaml` lists exactly these (checked by a test).
/// Each group of routes is handed the guard and the few services it calls, never the runtime.
enum Routes {
    static func router(_ runtime: BrokerRuntime) -> Router {
        var r = Router()
        let gate = Guard(auth: runtime.auth, clock: runtime.clock, executor: runtime.executor)
        HealthRoutes(gate: gate, pendingMigrations: runtime.pendingMigrations, engine: runtime.engine, feedAlive: { runtime.feedAlive }, metrics: { Metrics.render(runtime) }).register(&r)
        TokenRoutes(gate: gate, tokens: runtime.tokens, exchanges: runtime.exchanges).register(&r)
        AppTokenRoutes(gate: gate, appTokens: runtime.appTokens).register(&r)
        ProxyRoutes(gate: gate, proxy: runtime.proxy, maxBodyBytes: runtime.config.proxy.maxRequestBytes).register(&r)
        SessionRoutes(gate: gate, admin: runtime.admin).register(&r)
        EnrolmentRoutes(gate: gate, logins: runtime.logins).register(&r)
        AdminRoutes(gate: gate, admin: runtime.admin).register(&r)
        SignoutRoutes(gate: gate, signouts: runtime.signouts).register(&r)
        LogoutRoutes(gate: gate, backchannel: runtime.backchannel).register(&r)
        OperatorRoutes(gate: gate, operators: runtime.operators).register(&r)
        WebhookRoutes(gate: gate, webhooks: runtime.webhooks).register(&r)
        KeyRoutes(gate: gate, actors: runtime.actors).register(&r)
        runtime.requests.name(r.table)
        return r
    }
}
