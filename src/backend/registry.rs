//! The registry: one line per engine folder, in `backend/mod.rs`'s `registry!` (the macro
//! is here). The line names the engine (as scenarios spell it, lowercased) and its folder,
//! which it declares as a module; the folder's `DRIVER` is everything the harness knows of
//! it: its facts (`facts.rs`), how providers make a server, how queues are installed and
//! worked. Adding an engine is its folder and that one line; `tests` below walk every line.
//! The questions asked of an engine (its facts, its URLs, what it offers) are answered here
//! from its folder's facts.

use super::Engine;
#[cfg(test)]
use super::engine::ALL_FAULTS;
use super::engine::{EngineFacts, Supports, Words, is_scheme};
use crate::version::ServerVersion;

/// Declares every engine folder as a module of `backend` and the [`Engine`] enum over them:
/// invoked once, in `backend/mod.rs`, with one line per engine.
macro_rules! registry {
    ($( $(#[$meta:meta])* $variant:ident => $folder:ident, )+) => {
        $( pub mod $folder; )+

        /// Which server the queue lives in.
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize,
            clap::ValueEnum, schemars::JsonSchema,
        )]
        #[serde(rename_all = "lowercase")]
        pub enum Engine {
            $( $(#[$meta])* $variant, )+
        }

        /// The settings only one engine acts on, each engine's own type (its folder's
        /// `Settings`), as the plan carries them to the engine.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum EngineSettings {
            $( $variant($folder::Settings), )+
        }

        impl EngineSettings {
            /// `engine`'s settings read from the scenario's keys that are its own (by key,
            /// as written, e.g. `rabbitmq_queue`); the error names the key and why.
            pub fn read(
                engine: Engine,
                keys: serde_json::Map<String, serde_json::Value>,
            ) -> Result<EngineSettings, (String, String)> {
                let keys = serde_json::Value::Object(keys);
                Ok(match engine {
                    $( Engine::$variant => EngineSettings::$variant(
                        $crate::backend::registry::read_settings(keys)?,
                    ), )+
                })
            }

            /// The defaults of `engine`'s settings.
            pub fn defaults(engine: Engine) -> EngineSettings {
                match engine {
                    $( Engine::$variant => EngineSettings::$variant(Default::default()), )+
                }
            }
        }

        impl Engine {
            /// Every registered engine, in registry order.
            pub const ALL: &'static [Engine] = &[$(Engine::$variant),+];

            /// The engine's driver, from its folder.
            pub fn driver(self) -> &'static dyn Driver {
                match self {
                    $( Engine::$variant => &$folder::DRIVER, )+
                }
            }
        }
    };
}
/// An engine's settings from its keys, serde's words turned into (key, reason).
pub fn read_settings<T: serde::de::DeserializeOwned>(
    keys: serde_json::Value,
) -> Result<T, (String, String)> {
    serde_path_to_error::deserialize(keys).map_err(|e| {
        let key = e.path().to_string();
        let reason = e.inner().to_string();
        (format!("queue.{key}"), reason)
    })
}

impl Engine {
    /// Why a server setting belongs to another engine, so the plan refuses it before a
    /// server refuses to start; `None` for any other name.
    pub fn foreign_setting(self, name: &str) -> Option<&'static str> {
        (self.facts().foreign_setting)(name)
    }

    /// The engine's facts, from its folder.
    pub fn facts(self) -> &'static EngineFacts {
        self.driver().facts()
    }

    pub fn as_str(self) -> &'static str {
        self.facts().name
    }

    /// How the engine is named in messages and reports.
    pub fn label(self) -> &'static str {
        self.facts().label
    }

    pub fn supports(self) -> &'static Supports {
        &self.facts().supports
    }

    pub fn words(self) -> &'static Words {
        &self.facts().words
    }

    /// The engine whose URLs start with `scheme` (any case).
    pub fn of_scheme(scheme: &str) -> Option<Engine> {
        let scheme = scheme.to_ascii_lowercase();
        Engine::ALL
            .iter()
            .copied()
            .find(|e| e.facts().schemes.contains(&scheme.as_str()))
    }

    /// What a scenario on this engine may use, for refusals.
    pub fn offers(self) -> String {
        self.facts().offers()
    }

    /// The engine named `name` (its facts' name, as scenarios spell it).
    pub fn named(name: &str) -> Option<Engine> {
        Engine::ALL.iter().copied().find(|e| e.as_str() == name)
    }

    /// What to do when the container provider cannot have `image` (one clause).
    pub fn container_alternatives(self, image: &str, version: Option<&ServerVersion>) -> String {
        let f = self.facts();
        let url = format!("--db url --database-url {}://…", f.schemes[0]);
        let Some(i) = &f.install else {
            return format!("name a server with {url}");
        };
        let (script, built) = match version {
            Some(v) => (
                format!("{} {v}", i.build_script),
                format!("{}:{v}", super::engine::split_image(i.built_tag).0),
            ),
            None => (i.build_script.to_string(), i.built_tag.to_string()),
        };
        format!(
            "make the image available (`docker pull {image}`, or, where no registry is \
             reachable, `{script}` and {}={built} or --image), use a server installed on this \
             machine with --db local (`{}`), or name a server with {url}",
            i.variable, i.local_install
        )
    }

    /// Checks a server URL for this engine: `scheme://…` with one of its schemes, parsable by
    /// its client. The reason names the URL with its password masked.
    pub fn check_url(self, url: &str) -> Result<(), String> {
        let shown = crate::redact::redact_url(url);
        let facts = self.facts();
        let allowed = facts
            .schemes
            .iter()
            .map(|s| format!("{s}://"))
            .collect::<Vec<_>>()
            .join(" or ");
        let Some((scheme, rest)) = url.split_once(':').filter(|(s, _)| is_scheme(s)) else {
            return Err(format!(
                "{shown} is not a URL: database.engine = \"{}\" takes {allowed}…",
                facts.name
            ));
        };
        match Engine::of_scheme(scheme) {
            Some(e) if e == self => {}
            Some(other) => {
                return Err(format!(
                    "{shown} uses the scheme {scheme}: database.engine = \"{}\" takes {allowed} \
                     (for {scheme}:// set database.engine = \"{}\")",
                    facts.name,
                    other.as_str()
                ));
            }
            None => {
                return Err(format!(
                    "{shown} uses the scheme {scheme}: database.engine = \"{}\" takes {allowed}",
                    facts.name
                ));
            }
        }
        if !rest.starts_with("//") {
            return Err(format!(
                "{shown} is malformed: a URL starts with {scheme}:// (e.g. {scheme}://user:password@host:port/database)"
            ));
        }
        (facts.parse_url)(url)
            .map_err(|e| format!("{shown} is not a usable {} URL ({e})", facts.label))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_against_their_engine() {
        let pg = Engine::Postgres;
        assert!(pg.check_url("postgres://u:pw@h:5432/db").is_ok());
        assert!(pg.check_url("POSTGRESQL://h/db").is_ok());
        let e = pg.check_url("postgres:u:secret@h/db").unwrap_err();
        assert!(e.contains("malformed") && !e.contains("secret"), "{e}");
        let e = pg.check_url("mysql://u:secret@h/db").unwrap_err();
        assert!(e.contains("set database.engine = \"mariadb\""), "{e}");
        assert!(!e.contains("secret"), "{e}");
        let e = pg.check_url("host=h password=secret").unwrap_err();
        assert!(e.contains("not a URL") && !e.contains("secret"), "{e}");
        assert!(pg.check_url("ftp://h/x").unwrap_err().contains("ftp"));
        assert!(
            Engine::Mariadb
                .check_url("mariadb://root@h:3306/db")
                .is_ok()
        );
        assert!(Engine::Mariadb.check_url("mysql:root@h").is_err());
    }

    /// Each engine's own settings type takes exactly the keys its facts call its own, and
    /// reads its defaults back.
    #[test]
    fn each_engines_settings_are_its_own_keys() {
        for &e in Engine::ALL {
            let defaults = serde_json::to_value(super::super::EngineSettings::defaults(e)).unwrap();
            let inner = defaults
                .as_object()
                .and_then(|o| o.values().next())
                .unwrap();
            let keys: Vec<String> = inner
                .as_object()
                .unwrap()
                .keys()
                .map(|k| format!("queue.{k}"))
                .collect();
            assert_eq!(keys, e.supports().own_keys, "{}", e.as_str());
            let read = super::super::EngineSettings::read(e, inner.as_object().unwrap().clone());
            assert_eq!(read, Ok(super::super::EngineSettings::defaults(e)));
        }
        let bad = [("rabbitmq_queue".to_string(), serde_json::json!("lazy"))];
        let err = super::super::EngineSettings::read(Engine::Rabbitmq, bad.into_iter().collect())
            .unwrap_err();
        assert_eq!(err.0, "queue.rabbitmq_queue");
        assert!(err.1.contains("quorum"), "{}", err.1);
    }

    #[test]
    fn the_table_names_each_engine_once() {
        for &e in Engine::ALL {
            assert_eq!(Engine::of_scheme(e.facts().schemes[0]), Some(e));
            assert!(e.supports().variants.contains(&"seed"));
            assert!(e.supports().faults.iter().all(|f| ALL_FAULTS.contains(f)));
        }
        assert!(
            Engine::Mariadb
                .offers()
                .contains("seed, batch, delete, archive, visibility_timeout or custom")
        );
    }
}
