/// Slug is the shape of every name that appears in a URL path: tenant and client ids.
public enum Slug {
    /// `[a-z0-9][a-z0-9-]{0,62}`.
    public static func isValid(_ s: String) -> Bool {
        let u = s.utf8
        guard let first = u.first, u.count <= 63 else { return false }
        func ok(_ c: UInt8) -> Bool { (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c == 45 }
        return first != 45 && u.allSatisfy(ok)
    }
}
