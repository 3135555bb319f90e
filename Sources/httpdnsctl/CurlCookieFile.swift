/// One hop's Cookie value as curl gets it: from a private file, never as an argument (other
/// local users can read a process's arguments).
///
/// curl sends one Cookie header per request. With the user's `-b FILE` its cookie engine sends
/// the file's cookies in a header of its own, so a second one from `-H` would make two. There the
/// value goes as curl's cookie string instead (`--config FILE` holding `cookie = "VALUE"`, what
/// `-b NAME=VALUE` sets), which curl appends to its engine's cookies in that one header. Without
/// a cookie file, or for a value curl would not take as a cookie string, it is a header
/// (`-H @FILE` holding `Cookie: VALUE`); with a cookie file that value then starts with the
/// file's cookies and curl is not given the file (see `CurlCookieFileCookies`).
struct CurlCookieFile: Equatable {
    /// Where the file goes.
    let path: String
    /// The Cookie header's value.
    let value: String
    /// Whether curl gets the value as its cookie string rather than as a header.
    let isCookieString: Bool

    /// curl refuses a cookie string of this many bytes or more (its tool's MAX_COOKIE_LINE).
    static let cookieStringLimit = 8200

    /// `curlSendsCookies`: the user gave curl a cookie file (`-b FILE`), so its engine may send
    /// cookies of its own.
    init(path: String, value: String, curlSendsCookies: Bool) {
        self.path = path
        self.value = value
        // Without `=`, or with a leading `@`, curl reads `-b`'s value as a file name.
        isCookieString =
            curlSendsCookies && value.contains("=") && !value.hasPrefix("@")
            && value.utf8.count < Self.cookieStringLimit
    }

    /// The file's contents: a curl configuration line, or a header line.
    var contents: String {
        guard isCookieString else { return "Cookie: \(value)\n" }
        // curl's configuration syntax: a quoted value, with `\` escaping `\` and `"`.
        var quoted = ""
        for character in value {
            if character == "\\" || character == "\"" { quoted.append("\\") }
            quoted.append(character)
        }
        return "cookie = \"\(quoted)\"\n"
    }

    /// What curl's command line gets.
    var arguments: [String] { isCookieString ? ["--config", path] : ["--header", "@" + path] }
}
