import BrokerHTTP

/// Routes is the whole route table; `docs/openapi.yaml` lists exactly these (checked by a test).
enum Routes {
    static func router(_ runtime: BrokerRuntime) -> Router {
        var r = Router()
        HealthRoutes(runtime: runtime).register(&r)
        TokenRoutes(runtime: runtime).register(&r)
        SessionRoutes(runtime: runtime).register(&r)
        EnrolmentRoutes(runtime: runtime).register(&r)
        AdminRoutes(runtime: runtime).register(&r)
        SignoutRoutes(runtime: runtime).register(&r)
        LogoutRoutes(runtime: runtime).register(&r)
        OperatorRoutes(runtime: runtime).register(&r)
        WebhookRoutes(runtime: runtime).register(&r)
        KeyRoutes(runtime: runtime).register(&r)
        runtime.requests.name(r.table)
        return r
    }
}
