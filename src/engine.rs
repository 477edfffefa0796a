//! The engines a queue can live in and what each one offers: the one table that validation,
//! providers, backends and reports read. A leaf of the crate: it imports nothing from it, so
//! `scenario`, `backend` and `provider` can all depend on it and configuration flows one
//! way (scenario → plan → session → backend).

use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// Which server the queue lives in.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    Serialize,
    Deserialize,
    clap::ValueEnum,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// PostgreSQL (the article's engine; every variant).
    #[default]
    Postgres,
    /// MariaDB ≥ 10.6 (MySQL's `SKIP LOCKED`; variants `seed` and `batch`).
    Mariadb,
    /// RabbitMQ ≥ 3.10, a broker: a quorum queue, publisher confirms, acknowledgements after
    /// the handler (variants `seed` and `batch` as the prefetch).
    Rabbitmq,
    /// Redis ≥ 7 Streams, a broker: a consumer group claims, `XACK` completes (variants
    /// `seed` and `batch` as the job's life, not as SQL).
    Redis,
}

/// How a server the run started is stopped (the `restart_server` fault).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ShutdownMode {
    /// A clean shutdown: open transactions roll back, the server checkpoints and exits.
    #[default]
    Fast,
    /// Exit at once; crash recovery on the next start.
    Immediate,
}

/// What an engine runs. Validation refuses anything else in one line made from this table.
#[derive(Debug)]
pub struct Supports {
    /// Queue variants (`queue.variant`), by name.
    pub variants: &'static [&'static str],
    /// Fault kinds (`phases.faults.kind`), by name.
    pub faults: &'static [&'static str],
    /// `queue.fillfactor` and `queue.unlogged`.
    pub table_options: bool,
    /// The transactional outbox (`producers.outbox`).
    pub outbox: bool,
    /// `database.settings` on a server the run does not own (applied per session).
    pub url_session_settings: bool,
    /// `dbq-bench calibrate` (pgbench is PostgreSQL's).
    pub calibrate: bool,
    /// `consumers.claim_mode = "in_transaction"`: a claim held open until the job finishes,
    /// undone by the server when the worker vanishes.
    pub claim_in_transaction: bool,
    /// `consumers.claim_mode = "committed"`: a claim that stands until the job finishes or
    /// the reaper takes it back.
    pub claim_committed: bool,
    /// `queue.rabbitmq_queue`: the kind of queue is chosen (quorum, classic, transient).
    pub queue_kinds: bool,
    /// `verify.completion_audit`: the server records each completion, so the proof counts
    /// duplicate completions from the server as well as from the ledger. Where it cannot
    /// (a broker forgets an acknowledged message), the ledger alone counts them.
    pub completion_audit: bool,
    /// `[bystander]`: statements on a table of its own beside the queue.
    pub bystander: bool,
    /// The queue table has planner statistics (ANALYZE): `queue.stale_statistics` and the
    /// `analyze` fault.
    pub planner_statistics: bool,
}

/// What an engine's figures are called: the fields are the same, the statistics behind them
/// are the engine's own.
#[derive(Debug)]
pub struct Words {
    /// `dead_tuples`: dead row versions, or InnoDB's history list length (undo not purged).
    pub dead_tuples: &'static str,
    /// `wal_bytes`: WAL, or the redo log.
    pub wal: &'static str,
    /// What garbage collection of the table is counted.
    pub cleanup: &'static str,
    /// What the size figures measure.
    pub size: &'static str,
    /// The `idle_in_transaction` probes: while the horizon is held, and after its release.
    pub while_held: &'static str,
    pub once_released: &'static str,
    /// Where a broker's own figures (`DbSample::server`) come from; empty for a database.
    pub server_figures: &'static str,
}

/// One engine's row of the table.
#[derive(Debug)]
pub struct EngineFacts {
    pub name: &'static str,
    pub label: &'static str,
    /// URL schemes the engine takes (the first is the one it writes).
    pub schemes: &'static [&'static str],
    /// Checks that a URL of this engine can be parsed (the reason when it cannot).
    pub parse_url: fn(&str) -> Result<(), String>,
    /// The image the container provider starts by default, and the variable that names
    /// another.
    pub default_image: &'static str,
    pub image_variable: &'static str,
    pub supports: Supports,
    pub words: Words,
}

const ALL_FAULTS: &[&str] = &[
    "crash_workers",
    "kill_workers",
    "freeze_workers",
    "kill_backends",
    "restart_server",
    "idle_in_transaction",
    "delay_vacuum",
    "active_readers",
    "pool_exhaustion",
    "analyze",
];

const POSTGRES: EngineFacts = EngineFacts {
    name: "postgres",
    label: "PostgreSQL",
    schemes: &["postgres", "postgresql"],
    parse_url: |u| {
        sqlx::postgres::PgConnectOptions::from_str(u)
            .map(drop)
            .map_err(|e| e.to_string())
    },
    default_image: "postgres:17",
    image_variable: "DBQ_POSTGRES_IMAGE",
    supports: Supports {
        variants: &[
            "seed",
            "batch",
            "notify",
            "delete",
            "archive",
            "plain_index",
            "advisory_lock",
            "visibility_timeout",
            "rotation",
            "custom",
        ],
        faults: ALL_FAULTS,
        table_options: true,
        outbox: true,
        url_session_settings: true,
        calibrate: true,
        claim_in_transaction: true,
        claim_committed: true,
        queue_kinds: false,
        completion_audit: true,
        bystander: true,
        planner_statistics: true,
    },
    words: Words {
        dead_tuples: "dead tuples",
        wal: "WAL",
        cleanup: "autovacuums",
        size: "table and index",
        while_held: "during (VACUUM while held)",
        once_released: "after (VACUUM once released)",
        server_figures: "The design's other tables that keep jobs (job_queue_archive for archive, job_dead_letter for rotation): their rows (the statistics collector's estimate) and size with indexes.",
    },
};

const MARIADB: EngineFacts = EngineFacts {
    name: "mariadb",
    label: "MariaDB",
    schemes: &["mariadb", "mysql"],
    parse_url: |u| {
        let u = match u.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("mariadb") => {
                format!("mysql://{rest}")
            }
            _ => u.to_string(),
        };
        sqlx::mysql::MySqlConnectOptions::from_str(&u)
            .map(drop)
            .map_err(|e| e.to_string())
    },
    default_image: "mariadb:10.11",
    image_variable: "DBQ_MARIADB_IMAGE",
    supports: Supports {
        variants: &[
            "seed",
            "batch",
            "delete",
            "archive",
            "visibility_timeout",
            "custom",
        ],
        faults: &[
            "crash_workers",
            "kill_workers",
            "kill_backends",
            "restart_server",
            "idle_in_transaction",
            "analyze",
        ],
        table_options: false,
        outbox: false,
        url_session_settings: false,
        calibrate: false,
        claim_in_transaction: true,
        claim_committed: true,
        queue_kinds: false,
        completion_audit: true,
        bystander: true,
        planner_statistics: true,
    },
    words: Words {
        dead_tuples: "undo history (InnoDB history list length)",
        wal: "redo log",
        cleanup: "autovacuums (none: InnoDB purges)",
        size: "table and index",
        while_held: "during (purge blocked while held)",
        once_released: "after (purge once released)",
        server_figures: "",
    },
};

const RABBITMQ: EngineFacts = EngineFacts {
    name: "rabbitmq",
    label: "RabbitMQ",
    schemes: &["amqp"],
    parse_url: |u| {
        lapin::uri::AMQPUri::from_str(u).map_err(|e| e.to_string())?;
        rabbitmq_management_port(u).map(drop)
    },
    default_image: "rabbitmq:3.10",
    image_variable: "DBQ_RABBITMQ_IMAGE",
    supports: Supports {
        variants: &["seed", "batch"],
        faults: &[
            "crash_workers",
            "kill_workers",
            "freeze_workers",
            "kill_backends",
            "restart_server",
        ],
        table_options: false,
        outbox: false,
        url_session_settings: false,
        calibrate: false,
        claim_in_transaction: true,
        claim_committed: false,
        queue_kinds: true,
        completion_audit: false,
        bystander: false,
        planner_statistics: false,
    },
    words: Words {
        dead_tuples: "dead tuples (none: a queue has no MVCC)",
        wal: "message store",
        cleanup: "autovacuums (none: acknowledged messages are gone)",
        size: "server memory",
        while_held: "during",
        once_released: "after",
        server_figures: "From the broker's management API (which takes them in once a second on the brokers the harness starts, every 5 s by default): ready and unacked are the jobs' queue's messages, dead_letters its dead letters' queue's, persistent_bytes the jobs' messages written to disk, the memory the queue's and the node's, and the rates what the jobs' queue took in (published, retries included), handed out (delivered, redelivered) and had acknowledged.",
    },
};

const REDIS: EngineFacts = EngineFacts {
    name: "redis",
    label: "Redis",
    schemes: &["redis"],
    parse_url: |u| redis::Client::open(u).map(drop).map_err(|e| e.to_string()),
    default_image: "redis:7.0",
    image_variable: "DBQ_REDIS_IMAGE",
    supports: Supports {
        variants: &["seed", "batch"],
        faults: &[
            "crash_workers",
            "kill_workers",
            "freeze_workers",
            "kill_backends",
            "restart_server",
        ],
        table_options: false,
        outbox: false,
        url_session_settings: false,
        calibrate: false,
        claim_in_transaction: false,
        claim_committed: true,
        queue_kinds: false,
        completion_audit: true,
        bystander: true,
        planner_statistics: false,
    },
    words: Words {
        dead_tuples: "dead tuples (none: a stream has no MVCC)",
        wal: "append-only file",
        cleanup: "autovacuums (none: acknowledged entries are deleted)",
        size: "server memory",
        while_held: "during",
        once_released: "after",
        server_figures: "From the stream (XLEN, XPENDING), the delayed set and the dead-letter stream, and from INFO (used_memory, aof_current_size, total_commands_processed).",
    },
};

impl Engine {
    pub const ALL: [Engine; 4] = [
        Engine::Postgres,
        Engine::Mariadb,
        Engine::Rabbitmq,
        Engine::Redis,
    ];

    /// Why a server setting belongs to the other engine (its vacuum or purge levers), so
    /// the plan refuses it before a server refuses to start; `None` for any other name.
    pub fn foreign_setting(self, name: &str) -> Option<&'static str> {
        let vacuum = name.starts_with("autovacuum") || name.starts_with("vacuum_");
        match self {
            Engine::Rabbitmq if vacuum || name.starts_with("innodb_") => Some(
                "a database's cleanup setting; RabbitMQ has no vacuum or purge (acknowledged \
                 messages are gone): its settings are rabbitmq.conf keys",
            ),
            Engine::Redis if vacuum || name.starts_with("innodb_") => Some(
                "a database's cleanup setting; Redis has no vacuum or purge (acknowledged \
                 entries are deleted): its durability levers are appendonly, appendfsync and save",
            ),
            Engine::Mariadb if vacuum => Some(
                "a PostgreSQL vacuum setting; MariaDB has no vacuum (InnoDB purges old row \
                 versions in the background): its levers are innodb_purge_threads, \
                 innodb_max_purge_lag and innodb_purge_batch_size",
            ),
            Engine::Postgres if name.starts_with("innodb_") => Some(
                "a MariaDB (InnoDB) setting; on PostgreSQL vacuum's levers are \
                 autovacuum_naptime, autovacuum_vacuum_scale_factor and \
                 autovacuum_vacuum_cost_limit",
            ),
            _ => None,
        }
    }

    /// The engine's row of the table.
    pub fn facts(self) -> &'static EngineFacts {
        match self {
            Engine::Postgres => &POSTGRES,
            Engine::Mariadb => &MARIADB,
            Engine::Rabbitmq => &RABBITMQ,
            Engine::Redis => &REDIS,
        }
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
            .into_iter()
            .find(|e| e.facts().schemes.contains(&scheme.as_str()))
    }

    /// What a scenario on this engine may use, for refusals: "use variant seed or batch and
    /// the faults …".
    pub fn offers(self) -> String {
        let s = self.supports();
        let mode = match (s.claim_in_transaction, s.claim_committed) {
            (true, false) => ", claim mode in_transaction",
            (false, true) => ", claim mode committed",
            _ => "",
        };
        format!(
            "use variant {}{mode} and the faults {}",
            or_list(s.variants),
            s.faults.join(", ")
        )
    }

    /// Checks a server URL for this engine: `scheme://…` with one of its schemes, parsable by
    /// its client. The reason names the URL with its password masked.
    pub fn check_url(self, url: &str) -> Result<(), String> {
        let shown = redact_url(url);
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

/// `a, b or c`.
fn or_list(items: &[&str]) -> String {
    joined(items, "or")
}

/// `a, b and c`.
pub fn and_list(items: &[&str]) -> String {
    joined(items, "and")
}

fn joined(items: &[&str], last_word: &str) -> String {
    match items.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} {last_word} {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// A URL scheme: a letter, then letters, digits, `+`, `-` or `.`.
fn is_scheme(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

/// The management API's port on a broker named by URL, unless the URL says another
/// (`?management_port=N`, a parameter the AMQP client leaves alone).
pub const RABBITMQ_MANAGEMENT_PORT: u16 = 15672;

/// The management API's port for a broker named by `amqp_url`: its `management_port`
/// parameter, else [`RABBITMQ_MANAGEMENT_PORT`]; the reason when the parameter is not a port.
pub fn rabbitmq_management_port(amqp_url: &str) -> Result<u16, String> {
    let Ok(url) = reqwest::Url::parse(amqp_url) else {
        return Ok(RABBITMQ_MANAGEMENT_PORT);
    };
    match url.query_pairs().find(|(k, _)| k == "management_port") {
        None => Ok(RABBITMQ_MANAGEMENT_PORT),
        Some((_, v)) => v.parse().ok().filter(|p| *p > 0).ok_or_else(|| {
            format!("management_port={v} is not a port (the management API's, 1-65535)")
        }),
    }
}

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

    #[test]
    fn the_table_names_each_engine_once() {
        for e in Engine::ALL {
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
