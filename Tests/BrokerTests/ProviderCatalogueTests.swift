import Broker
import BrokerCore
import Foundation
import Testing

/// The shipped catalogue (providers/) read as the broker reads it at start, and each entry
/// resolved as a registration naming it would be: every entry is a valid descriptor once the
/// registration gives what its placeholders stand for.
@Suite("The provider catalogue")
struct ProviderCatalogueTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("providers")

    func registration(issuer: String = "") -> ClientRegistration {
        ClientRegistration(tenant: "t", id: "c", issuer: issuer, clientID: "id", authMethod: .clientSecretBasic, redirectURI: "https://b.example/cb",
                           scopes: [])
    }

    @Test("every entry resolves to a valid descriptor; an issuer with placeholders only once the registration fills them")
    func everyEntry() throws {
        let catalogue = try ProviderCatalogue.load([Self.folder])
        #expect(catalogue.entries.count >= 20, "\(catalogue.entries.keys.sorted())")
        for name in catalogue.entries.keys.sorted() {
            if let e = refusal(catalogue, ProviderChoice(provider: name)) {
                // Only an entry whose issuer is a template of the operator's may be refused, and for that alone.
                #expect(e.message.contains("placeholders filled in"), "\(name): \(e.message)")
                let c = try catalogue.resolve(registration(issuer: "https://idp.example.com/tenant"), ProviderChoice(provider: name))
                #expect(c.issuer == "https://idp.example.com/tenant" && c.descriptor.issuer == "https://idp.example.com/tenant", "\(name)")
                continue
            }
            let c = try catalogue.resolve(registration(), ProviderChoice(provider: name))
            #expect(!c.issuer.contains("{") && c.descriptor.title != nil && !c.descriptor.documentation.isEmpty, "\(name)")
            if c.descriptor.kind == .oauth2 { #expect(c.metadataSource != nil || c.descriptor.endpoints.authorization != nil, "\(name): no way to log in") }
        }
    }

    @Test("a registration's descriptor is merged over the entry; an unknown name lists the known ones")
    func mergedAndUnknown() throws {
        let catalogue = try ProviderCatalogue.load([Self.folder])
        let c = try catalogue.resolve(registration(), ProviderChoice(provider: "github", patch: #"{"endpoints": {"token": "http://127.0.0.1:9/t"}, "revocation": null}"#))
        #expect(c.descriptor.endpoints.token?.absoluteString == "http://127.0.0.1:9/t" && c.issuer == "http://127.0.0.1:9")
        #expect(c.descriptor.endpoints.authorization?.host == "github.com" && c.descriptor.revocation.style == .rfc7009, "null removed the entry's revocation")
        let unknown = refusal(catalogue, ProviderChoice(provider: "gitub"))
        #expect(unknown?.code == "unknown_provider" && unknown?.message.contains("github") == true)
    }

    func refusal(_ catalogue: ProviderCatalogue, _ choice: ProviderChoice) -> BrokerError? {
        do { _ = try catalogue.resolve(registration(), choice); return nil } catch { return error }
    }
}
