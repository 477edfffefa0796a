//! A server's version three ways: as a scenario asks for it (`database.version = "17"`,
//! `"10.11"`), as a server words it (`PostgreSQL 17.6 (Debian 17.6-0+deb13u1) on …`,
//! `11.8.3-MariaDB-0+deb13u1`), and as a release (the version without its patch level:
//! `17`, `11.8`), which is what two results must share to be compared.

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The version a scenario asks for: one to three whole numbers joined by dots. The server
/// agrees when its own version starts with these numbers (`17` takes 17.6, `10.11` takes
/// 10.11.14, `10.1` does not take 10.11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerVersion(String);

impl ServerVersion {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Checks the text of a version (`17`, `10.11`); the reason when it is not one.
    pub fn parse(text: &str) -> Result<ServerVersion, String> {
        let parts: Vec<&str> = text.split('.').collect();
        let numeric =
            |p: &&str| !p.is_empty() && p.len() <= 4 && p.bytes().all(|b| b.is_ascii_digit());
        if parts.len() > 3 || !parts.iter().all(numeric) {
            return Err(format!(
                "\"{text}\" is not a version: write one to three whole numbers of at most 4 digits, joined by dots (\"17\", \"10.11\")"
            ));
        }
        Ok(ServerVersion(text.to_string()))
    }

    /// Whether a server whose version is `number` (`17.6`, `10.11.14`) is this version.
    pub fn agrees_with(&self, number: &str) -> bool {
        let have: Vec<&str> = number.split('.').collect();
        let want: Vec<&str> = self.0.split('.').collect();
        want.len() <= have.len()
            && want
                .iter()
                .zip(&have)
                .all(|(w, h)| w.parse::<u32>().ok() == h.parse::<u32>().ok())
    }
}

impl fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The version number in a server's own words: the first word that starts with a digit,
/// up to the first character that is neither a digit nor a dot (`PostgreSQL 17.6 (Debian …)`
/// → `17.6`; `11.8.3-MariaDB-0+deb13u1` → `11.8.3`).
pub fn number_in(words: &str) -> Option<&str> {
    let word = words
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))?;
    let end = word
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(word.len());
    Some(word[..end].trim_end_matches('.'))
}

/// A version's release: without its patch level when it has one (`17.6` → `17`,
/// `10.11.14` → `10.11`, `3.10.8` → `3.10`; a bare `18` stays `18`).
pub fn release(number: &str) -> &str {
    match number.rfind('.') {
        Some(i) => &number[..i],
        None => number,
    }
}

/// What two results must share to be compared: the engine and its release, from the
/// server's own words (`PostgreSQL 17`, `MariaDB 11.8`); the words whole when they hold no
/// number.
pub fn release_of(label: &str, words: &str) -> String {
    match number_in(words) {
        Some(n) => format!("{label} {}", release(n)),
        None => format!("{label} {words}"),
    }
}

impl Serialize for ServerVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ServerVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ServerVersion;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a version as text (\"17\", \"10.11\") or a whole number (17)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ServerVersion, E> {
                ServerVersion::parse(v).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ServerVersion, E> {
                ServerVersion::parse(&v.to_string()).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ServerVersion, E> {
                ServerVersion::parse(&v.to_string()).map_err(E::custom)
            }
            // A number with a dot is a float to TOML, which loses what a version keeps
            // (10.10 would read as 10.1): refused, with how to write it.
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ServerVersion, E> {
                Err(E::custom(format!(
                    "{v} reads as a decimal number, which can lose a version's digits (10.10 reads as 10.1); write it as text: \"{v}\" (on the command line: --set 'database.version=\"{v}\"')"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for ServerVersion {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ServerVersion".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": ["string", "integer"],
            "description": "The server's version: \"17\", \"18\", \"10.11\", \"11.8\".",
            "examples": ["17", "10.11"]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_agrees_when_its_version_starts_with_the_one_asked_for() {
        let v = |t: &str| ServerVersion::parse(t).unwrap();
        assert!(v("17").agrees_with("17.6"));
        assert!(v("17").agrees_with("17"));
        assert!(!v("17").agrees_with("15.14"));
        assert!(!v("1").agrees_with("17.6"));
        assert!(v("10.11").agrees_with("10.11.14"));
        assert!(!v("10.1").agrees_with("10.11.14"));
        assert!(!v("11.8.3").agrees_with("11.8"));
        assert!(ServerVersion::parse("17beta").is_err());
        assert!(ServerVersion::parse("").is_err());
        assert!(ServerVersion::parse("1.2.3.4").is_err());
    }

    #[test]
    fn the_number_and_release_are_read_from_a_servers_own_words() {
        let pg = "PostgreSQL 17.6 (Debian 17.6-0+deb13u1) on x86_64-pc-linux-gnu, compiled by gcc";
        assert_eq!(number_in(pg), Some("17.6"));
        assert_eq!(release(number_in(pg).unwrap()), "17");
        let maria = "11.8.3-MariaDB-0+deb13u1 from Debian";
        assert_eq!(number_in(maria), Some("11.8.3"));
        assert_eq!(release("11.8.3"), "11.8");
        assert_eq!(number_in("PostgreSQL 18beta1 on x86_64"), Some("18"));
        assert_eq!(release("18"), "18");
        assert_eq!(number_in("no digits here"), None);
        assert_eq!(release_of("PostgreSQL", pg), "PostgreSQL 17");
        assert_eq!(release_of("MariaDB", maria), "MariaDB 11.8");
    }

    #[test]
    fn a_decimal_number_is_refused_and_text_or_a_whole_number_taken() {
        #[derive(Deserialize)]
        struct T {
            v: ServerVersion,
        }
        let read = |s: &str| {
            toml::from_str::<T>(s)
                .map(|t| t.v.0)
                .map_err(|e| e.to_string())
        };
        assert_eq!(read("v = 17").unwrap(), "17");
        assert_eq!(read("v = \"10.11\"").unwrap(), "10.11");
        let e = read("v = 10.10").unwrap_err();
        assert!(e.contains("write it as text"), "{e}");
        let e = read("v = \"x\"").unwrap_err();
        assert!(e.contains("not a version"), "{e}");
    }
}
