//! Secrets kept out of messages and saved files: every password in a connection string
//! replaced by `***`. A leaf: it imports nothing from the crate.

/// A connection string with every password replaced by `***`, for messages and saved files.
/// Covers the forms libpq and sqlx accept: URL userinfo (`scheme://user:pw@`, also without
/// the `//`), URL query parameters and `key=value` strings (`password=`, `sslpassword=`,
/// quoted or not), and strings that fail to parse as either.
pub fn redact_url(url: &str) -> String {
    mask_userinfo(&mask_password_values(url))
}

/// `…password=VALUE…` → `…password=***…`, the value ending at `&`, whitespace or the end,
/// or at its closing quote when quoted.
fn mask_password_values(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while let Some(found) = lower[i..].find("password=") {
        let value = i + found + "password=".len();
        out.push_str(&s[i..value]);
        out.push_str("***");
        let rest = &s[value..];
        let len = match rest.strip_prefix('\'') {
            Some(quoted) => 1 + quoted_len(quoted),
            None => rest
                .find(|c: char| c == '&' || c.is_whitespace())
                .unwrap_or(rest.len()),
        };
        i = value + len;
    }
    out.push_str(&s[i..]);
    out
}

/// The length of a single-quoted value after its opening quote, closing quote included
/// (backslash escapes skipped); the whole rest when it never closes.
fn quoted_len(quoted: &str) -> usize {
    let mut chars = quoted.char_indices();
    while let Some((k, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '\'' => return k + 1,
            _ => {}
        }
    }
    quoted.len()
}

/// `scheme://user:pw@host…` (or `scheme:user:pw@host…`) → `scheme://user:***@host…`.
fn mask_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once(':') else {
        return url.to_string();
    };
    let slashes = if rest.starts_with("//") { "//" } else { "" };
    let rest = &rest[slashes.len()..];
    let Some((userinfo, host)) = rest.rsplit_once('@') else {
        return url.to_string();
    };
    if userinfo.contains(char::is_whitespace) {
        return url.to_string();
    }
    match userinfo.split_once(':') {
        Some((user, pw)) if pw != "***" => format!("{scheme}:{slashes}{user}:***@{host}"),
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked() {
        let cases = [
            (
                "postgres://u:secret@h:5432/db",
                "postgres://u:***@h:5432/db",
            ),
            ("postgres://u@h/db", "postgres://u@h/db"),
            ("postgres://h/db", "postgres://h/db"),
            (
                "postgres://u@h/db?password=secret&sslmode=require",
                "postgres://u@h/db?password=***&sslmode=require",
            ),
            (
                "postgres://h/db?sslpassword=secret",
                "postgres://h/db?sslpassword=***",
            ),
            (
                "host=h user=u password=secret dbname=d",
                "host=h user=u password=*** dbname=d",
            ),
            (
                "host=h PASSWORD='se cr\\'et' dbname=d",
                "host=h PASSWORD=*** dbname=d",
            ),
            ("postgres:u:secret@h/db", "postgres:u:***@h/db"),
            ("postgresql://u:p%40ss@h/db", "postgresql://u:***@h/db"),
            ("password=", "password=***"),
        ];
        for (given, masked) in cases {
            assert_eq!(redact_url(given), masked, "{given}");
            assert!(!redact_url(given).contains("secret"), "{given}");
        }
    }
}
