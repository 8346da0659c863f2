extension ClientRegistration {
    /// How its token-endpoint refusals are read: its descriptor's codes, and for a client that
    /// authenticates by its certificate (RFC 8705 §2), a bare 403 as a refusal of the client —
    /// the certificate — rather than of the grant (`RefusalCodes.bareForbiddenRefusesClient`).
    public var refusals: RefusalCodes {
        var r = descriptor.refusals
        if authMethod.needsCertificate { r.bareForbiddenRefusesClient = true }
        return r
    }
}
