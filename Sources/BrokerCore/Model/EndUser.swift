/// EndUser is the rule for the application's own id of its user (`end_user`), kept beside the
/// provider's subject: what the application that started a login calls its user, never what
/// the provider says.
///
/// A valid end user id is 1...255 bytes of UTF-8 whose every character is printable: no control
/// character (Unicode category Cc: U+0000–U+001F, U+007F–U+009F), no format character (Cf:
/// zero-width spaces and joiners, bidirectional overrides, U+FEFF, …), no line or paragraph
/// separator (U+2028, U+2029), and no white space at either end. Anything else is allowed and
/// compared byte for byte: no case folding, no normalization.
public enum EndUser {
    public static let maxBytes = 255

    /// Why the request's `end_user` is refused.
    public static let rule = "'end_user' must be 1...255 bytes of printable text: no control or format characters, "
        + "no line or paragraph separators, no white space at either end"

    public static func isValid(_ s: String) -> Bool {
        let bytes = s.utf8.count
        guard bytes >= 1, bytes <= maxBytes, let first = s.unicodeScalars.first, let last = s.unicodeScalars.last,
              !first.properties.isWhitespace, !last.properties.isWhitespace else { return false }
        return s.unicodeScalars.allSatisfy { c in
            switch c.properties.generalCategory {
            case .control, .format, .surrogate, .lineSeparator, .paragraphSeparator: false
            default: true
            }
        }
    }

    /// `s` when absent or valid; a 400 `invalid_request` otherwise.
    public static func checked(_ s: String?) throws(BrokerError) -> String? {
        guard let s else { return nil }
        guard isValid(s) else { throw BrokerError.badRequest(code: "invalid_request", message: rule) }
        return s
    }
}
