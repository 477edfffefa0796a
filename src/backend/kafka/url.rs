//! A Kafka URL: `kafka://[user:password@]host:port[,host:port…][?client.setting=value&…]`.
//! The hosts are the bootstrap servers; a user and password become SASL's; every query
//! pair is a setting of the client (librdkafka's names: `security.protocol`,
//! `sasl.mechanism`, …), applied to every connection the run makes. The password is never
//! shown: [`redacted`] is what messages and reports print.

use percent_encoding::percent_decode_str;

/// The client settings a URL stands for, `bootstrap.servers` first.
pub fn client_settings(url: &str) -> Result<Vec<(String, String)>, String> {
    let rest = url
        .strip_prefix("kafka://")
        .ok_or("a Kafka URL starts with kafka://")?;
    let (authority, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = authority.trim_end_matches('/');
    let (user, hosts) = match authority.rsplit_once('@') {
        Some((user, hosts)) => (Some(user), hosts),
        None => (None, authority),
    };
    if hosts.is_empty() {
        return Err("no host: kafka://host:9092[,host2:9092]".into());
    }
    for host in hosts.split(',') {
        let port = host.rsplit_once(':').map(|(_, p)| p);
        if !port.is_some_and(|p| p.parse::<u16>().is_ok_and(|p| p > 0)) {
            return Err(format!("{host:?} is not host:port"));
        }
    }
    let mut settings = vec![("bootstrap.servers".to_string(), hosts.to_string())];
    if let Some(user) = user {
        let (name, password) = user.split_once(':').unwrap_or((user, ""));
        let decode = |s: &str| percent_decode_str(s).decode_utf8_lossy().into_owned();
        settings.push(("sasl.username".into(), decode(name)));
        settings.push(("sasl.password".into(), decode(password)));
    }
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair:?} is not setting=value"))?;
        settings.push((
            k.to_string(),
            percent_decode_str(v).decode_utf8_lossy().into_owned(),
        ));
    }
    refuse_unused_credentials(&settings)?;
    Ok(settings)
}

/// Credentials are sent only by a SASL protocol: a user and password beside `PLAINTEXT` or
/// `SSL` (librdkafka's default is `PLAINTEXT`) would be silently unused, so they are refused
/// rather than guessed at (SASL over TLS or not is the team's choice, not the harness's).
fn refuse_unused_credentials(settings: &[(String, String)]) -> Result<(), String> {
    let get = |key: &str| settings.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    if get("sasl.username").is_none() {
        return Ok(());
    }
    let protocol = get("security.protocol")
        .map_or("PLAINTEXT (the default)".into(), |p| p.to_ascii_uppercase());
    if protocol.starts_with("SASL_") {
        return Ok(());
    }
    Err(format!(
        "a user and password were given but security.protocol is {protocol}, which sends \
         none: add ?security.protocol=SASL_SSL (or SASL_PLAINTEXT) and sasl.mechanism=PLAIN, \
         SCRAM-SHA-256 or SCRAM-SHA-512, or leave the credentials out"
    ))
}

/// The bootstrap servers of a URL.
pub fn bootstrap_servers(url: &str) -> Result<String, String> {
    Ok(client_settings(url)?.swap_remove(0).1)
}

/// The URL that [`client_settings`] reads back as `settings` (password included: for worker
/// processes, never for messages).
pub fn to_url(settings: &[(String, String)]) -> String {
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    let get = |key: &str| {
        settings
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    let enc = |s: &str| utf8_percent_encode(s, NON_ALPHANUMERIC).to_string();
    let auth = match (get("sasl.username"), get("sasl.password")) {
        (Some(u), Some(p)) => format!("{}:{}@", enc(u), enc(p)),
        (Some(u), None) => format!("{}@", enc(u)),
        _ => String::new(),
    };
    let query: Vec<String> = settings
        .iter()
        .skip(1)
        .filter(|(k, _)| k != "sasl.username" && k != "sasl.password")
        .map(|(k, v)| format!("{k}={}", enc(v)))
        .collect();
    let hosts = settings.first().map_or("", |(_, v)| v.as_str());
    match query.is_empty() {
        true => format!("kafka://{auth}{hosts}"),
        false => format!("kafka://{auth}{hosts}?{}", query.join("&")),
    }
}

/// The URL as messages show it: its hosts and settings, the password left out.
pub fn redacted(settings: &[(String, String)]) -> String {
    let shown: Vec<String> = settings
        .iter()
        .skip(1)
        .filter(|(k, _)| k != "sasl.password")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let hosts = settings.first().map_or("", |(_, v)| v.as_str());
    match shown.is_empty() {
        true => format!("kafka://{hosts}"),
        false => format!("kafka://{hosts}?{}", shown.join("&")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_become_client_settings_and_passwords_stay_hidden() {
        let s = client_settings("kafka://app:s%40cret@k1:9092,k2:9093?security.protocol=SASL_PLAINTEXT&sasl.mechanism=PLAIN").unwrap();
        assert_eq!(s[0], ("bootstrap.servers".into(), "k1:9092,k2:9093".into()));
        assert!(s.contains(&("sasl.password".into(), "s@cret".into())));
        assert!(s.contains(&("sasl.mechanism".into(), "PLAIN".into())));
        let shown = redacted(&s);
        assert!(!shown.contains("cret"), "{shown}");
        let unused = client_settings("kafka://app:s%40cret@k1:9092").unwrap_err();
        assert!(
            unused.contains("security.protocol is PLAINTEXT") && !unused.contains("cret"),
            "{unused}"
        );
        assert!(shown.starts_with("kafka://k1:9092,k2:9093?"), "{shown}");
        assert_eq!(
            bootstrap_servers("kafka://localhost:9092/").unwrap(),
            "localhost:9092"
        );
        assert_eq!(
            client_settings(&to_url(&s)).unwrap(),
            s,
            "the URL reads back"
        );
        for bad in [
            "http://h:1",
            "kafka://",
            "kafka://host",
            "kafka://h:0",
            "kafka://h:1?x",
            "kafka://app:pw@h:1",
            "kafka://app:pw@h:1?security.protocol=SSL",
        ] {
            assert!(client_settings(bad).is_err(), "{bad}");
        }
    }
}
