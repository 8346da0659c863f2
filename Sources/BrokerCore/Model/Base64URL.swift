import Foundation

/// Base64URL is the unpadded URL-safe alphabet of RFC 4648 §5, used by JOSE and our ids.
public enum Base64URL {
    public static func encode<B: Collection>(_ bytes: B) -> String where B.Element == UInt8 {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    public static func decode(_ s: String) -> [UInt8]? {
        var b = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !b.contains("=") else { return nil }
        while b.count % 4 != 0 { b += "=" }
        return Data(base64Encoded: b).map { [UInt8]($0) }
    }
}
