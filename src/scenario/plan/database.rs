//! The `[database]` section's plan: the engine, how the server is had, the version asked
//! for (which names the image's tag), its settings (checked as names, and refused where
//! they belong to another engine).

use super::*;
use crate::backend::engine::split_image;
use crate::version::ServerVersion;

#[derive(Debug, Clone, PartialEq)]
pub struct DatabasePlan {
    pub engine: Engine,
    pub provider: ProviderKind,
    /// The image the container provider runs: `database.image`, else the environment's or
    /// the official image, tagged with `database.version` when one is asked for.
    pub image: String,
    /// The server's version the scenario asks for (`database.version`): each provider
    /// refuses a server of another.
    pub version: Option<ServerVersion>,
    pub url: Option<String>,
    pub startup_timeout: Duration,
    /// Validated `name = value` server settings.
    pub settings: Vec<(String, String)>,
}

/// `[database]`, checked: provider, image, URL and server settings.
pub(super) fn database_plan(
    db: &DatabaseSection,
    env: &EnvDefaults,
    source: &str,
) -> Result<DatabasePlan, InputError> {
    let err = |key: &str, reason: String| InputError::new(source, key, reason);
    let mut settings = Vec::new();
    for (key, value) in &db.settings {
        let k = format!("database.settings.{key}");
        if !is_setting_name(key) {
            return Err(err(
                &k,
                "not a PostgreSQL setting name (letters, digits, _ and .)".into(),
            ));
        }
        if let Some(reason) = db.engine.foreign_setting(key) {
            return Err(err(&k, reason.into()));
        }
        let v = match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
            _ => return Err(err(&k, "must be a string, number or boolean".into())),
        };
        if v.contains(['\n', '\r', '\0']) {
            return Err(err(&k, "must not contain line breaks".into()));
        }
        settings.push((key.clone(), v));
    }
    if db.image.as_deref().is_some_and(|i| i.trim().is_empty()) {
        return Err(err("database.image", "must not be empty".into()));
    }
    if db.startup_timeout.0.is_zero() {
        return Err(err(
            "database.startup_timeout",
            "must be more than 0s".into(),
        ));
    }
    let url = db.url.clone().or_else(|| env.database_url.clone());
    if let Some(u) = &url {
        db.engine.check_url(u).map_err(|reason| {
            err(
                "database.url",
                format!("{reason}; it came from --database-url, database.url or DATABASE_URL"),
            )
        })?;
    }
    check_provider(db, url.is_some(), source)?;
    let database = DatabasePlan {
        engine: db.engine,
        provider: db.provider,
        image: image_of(db, env),
        version: db.version.clone(),
        url,
        startup_timeout: db.startup_timeout.0,
        settings,
    };
    Ok(database)
}

/// The image the container provider runs: `database.image` as given; else the one the
/// environment names (`DBQ_POSTGRES_IMAGE`) or the official one, its tag replaced by
/// `database.version` when one is asked for (`postgres:17` → `postgres:18`,
/// `dbq-bench-postgres:15` → `dbq-bench-postgres:17`).
fn image_of(db: &DatabaseSection, env: &EnvDefaults) -> String {
    if let Some(image) = &db.image {
        return image.clone();
    }
    let base = env
        .image(db.engine)
        .map(str::to_string)
        .or_else(|| Some(db.engine.facts().install.as_ref()?.image.to_string()))
        .unwrap_or_default();
    match &db.version {
        Some(v) if !base.is_empty() => format!("{}:{v}", split_image(&base).0),
        _ => base,
    }
}

/// Whether the provider can serve the engine with the URL given (or not given): a provider
/// that starts its own server has no use for one; the url provider needs one.
fn check_provider(db: &DatabaseSection, has_url: bool, source: &str) -> Result<(), InputError> {
    let err = |key: &str, reason: String| InputError::new(source, key, reason);
    let facts = db.engine.facts();
    if facts.install.is_none()
        && matches!(db.provider, ProviderKind::Local | ProviderKind::Container)
    {
        return Err(err(
            "database.provider",
            format!(
                "the harness cannot start a server for {}: use --db url --database-url {}://",
                facts.label, facts.schemes[0]
            ),
        ));
    }
    if db.url.is_some() && matches!(db.provider, ProviderKind::Local | ProviderKind::Container) {
        return Err(err(
            "database.url",
            format!(
                "a server's URL was given, but the {} provider starts a server of its own and would not use it: drop the URL, or use --db url (or auto)",
                db.provider.as_str()
            ),
        ));
    }
    if db.provider == ProviderKind::Url && !has_url {
        return Err(err(
            "database.url",
            "the url provider needs a server: pass --database-url, set database.url or DATABASE_URL".into(),
        ));
    }
    Ok(())
}

pub(super) fn is_setting_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_tags_the_environments_or_official_image_and_leaves_a_named_one() {
        let section = |image: Option<&str>, version: Option<&str>| DatabaseSection {
            image: image.map(str::to_string),
            version: version.map(|v| ServerVersion::parse(v).unwrap()),
            ..DatabaseSection::default()
        };
        let none = EnvDefaults::default();
        let env = EnvDefaults {
            images: vec![(Engine::Postgres, "dbq-bench-postgres:15".into())],
            database_url: None,
        };
        assert_eq!(image_of(&section(None, Some("18")), &none), "postgres:18");
        assert_eq!(image_of(&section(None, None), &none), "postgres:17");
        assert_eq!(
            image_of(&section(None, Some("17")), &env),
            "dbq-bench-postgres:17"
        );
        assert_eq!(
            image_of(&section(None, None), &env),
            "dbq-bench-postgres:15"
        );
        assert_eq!(
            image_of(&section(Some("reg:5000/pg:15-x"), Some("17")), &env),
            "reg:5000/pg:15-x"
        );
    }
}
