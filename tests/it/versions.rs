//! `database.version`: the axis resolves on each provider (the container provider runs the
//! image of that tag, the local provider this machine's binaries of it, the url provider
//! refuses a server of another version in one line); one smoke run per version, side by
//! side in a matrix; `compare` refuses to compare two versions unless told to.

use crate::support::{
    require_local_binaries, require_mariadb_binaries, require_version_image, shared_url,
};
use dbq_bench::scenario::Engine;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn dbq(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// The error of a command refused as bad input: exit 2 and one line.
fn refused(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(o));
    failed_in_one_line(o)
}

/// The error of a command that failed: not exit 0, and one line.
fn failed_in_one_line(o: &Output) -> String {
    let e = stderr(o);
    assert_ne!(o.status.code(), Some(0), "stderr: {e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    e
}

/// smoke.toml, one second per phase.
const SHORT: [&str; 6] = [
    "scenarios/smoke.toml",
    "--set",
    "phases.0.duration=1s",
    "--set",
    "phases.1.duration=1s",
    "--quiet",
];

fn summary(run: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap()
}

/// Each cell's first run directory, in cell order, from comparison.json.
fn cell_runs(out: &Path) -> Vec<(String, std::path::PathBuf)> {
    let text = std::fs::read_to_string(out.join("comparison.json")).unwrap();
    let c: Value = serde_json::from_str(&text).unwrap();
    c["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| {
            let run = &cell["runs"][0];
            let server = run["server"].as_str().unwrap_or_default().to_string();
            (server, run["dir"].as_str().unwrap().into())
        })
        .collect()
}

/// PostgreSQL 15, 17 and 18 side by side, each on a container of its own version; the
/// results say which version each cell measured, and `compare` refuses to compare two of
/// them unless told to.
#[test]
fn postgresql_versions_run_side_by_side_and_compare_refuses_across_them() {
    for v in ["15", "17", "18"] {
        require_version_image(Engine::Postgres, v);
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let mut args = vec!["matrix"];
    args.extend(SHORT);
    args.extend(["--out", out, "--db", "container"]);
    args.extend(["--vary", "database.version=15,17,18"]);
    let o = dbq(&args);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let cells = cell_runs(dir.path());
    let servers: Vec<&str> = cells.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(servers, ["PostgreSQL 15", "PostgreSQL 17", "PostgreSQL 18"]);
    for ((_, run), v) in cells.iter().zip(["15.", "17.", "18."]) {
        let s = summary(run);
        let words = s["meta"]["server_version"].as_str().unwrap();
        assert!(words.starts_with(&format!("PostgreSQL {v}")), "{words}");
        assert_eq!(s["accounting"]["sound"], true, "{}", run.display());
    }
    let (a, b) = (cells[0].1.to_str().unwrap(), cells[1].1.to_str().unwrap());
    let e = refused(&dbq(&["compare", a, b]));
    assert!(
        e.contains("server: baseline PostgreSQL 15, candidate PostgreSQL 17"),
        "{e}"
    );
    let allowed = dbq(&["compare", a, b, "--allow-different", "server", "--quiet"]);
    assert!(
        stderr(&allowed).contains("compared although they differ"),
        "{}",
        stderr(&allowed)
    );
}

/// MariaDB 10.11 and 11.8 side by side, each on a container of its own version.
#[test]
fn mariadb_versions_run_side_by_side() {
    for v in ["10.11", "11.8"] {
        require_version_image(Engine::Mariadb, v);
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let mut args = vec!["matrix"];
    args.extend(SHORT);
    args.extend(["--out", out, "--db", "container"]);
    args.extend(["--set", "database.engine=\"mariadb\""]);
    args.extend(["--vary", "database.version=\"10.11\",\"11.8\""]);
    let o = dbq(&args);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let cells = cell_runs(dir.path());
    let servers: Vec<&str> = cells.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(servers, ["MariaDB 10.11", "MariaDB 11.8"]);
}

/// A version written as a decimal number is refused before anything starts: TOML would
/// read 10.10 as 10.1.
#[test]
fn a_version_written_as_a_decimal_number_is_refused_in_one_line() {
    let o = dbq(&[
        "validate",
        "scenarios/smoke.toml",
        "--set",
        "database.version=10.10",
    ]);
    let e = refused(&o);
    assert!(
        e.contains("database.version") && e.contains("write it as text"),
        "{e}"
    );
}

/// The version of the shared server, and one it is not.
fn shared_and_other_version() -> (String, &'static str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let words: String = rt.block_on(async {
        use sqlx::Connection;
        let mut c = sqlx::PgConnection::connect(shared_url()).await.unwrap();
        sqlx::query_scalar("SHOW server_version")
            .fetch_one(&mut c)
            .await
            .unwrap()
    });
    let major = words.split('.').next().unwrap().to_string();
    let other = if major == "17" { "15" } else { "17" };
    (major, other)
}

/// The url provider measures a server of the version asked for, and refuses another in one
/// line that names both, with nothing installed on it.
#[test]
fn the_url_provider_refuses_a_server_of_another_version() {
    let (major, other) = shared_and_other_version();
    let dir = tempfile::tempdir().unwrap();
    let run = |version: &str, out: &str| {
        let mut args = vec!["run"];
        args.extend(SHORT);
        let version = format!("database.version={version}");
        args.extend(["--db", "url", "--database-url", shared_url(), "--out", out]);
        args.extend(["--set", &version]);
        dbq(&args)
    };
    let same = dir.path().join("same");
    let o = run(&major, same.to_str().unwrap());
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let e = refused(&run(other, dir.path().join("other").to_str().unwrap()));
    assert!(
        e.contains("database.version")
            && e.contains(&format!("asks for PostgreSQL {other}"))
            && e.contains(&format!("this server is PostgreSQL {major}.")),
        "{e}"
    );
}

/// The local provider runs this machine's binaries of the version asked for, and names the
/// versions installed when it has not that one.
#[test]
fn the_local_provider_runs_the_binaries_of_the_version_asked_for() {
    require_local_binaries();
    let installed: Vec<String> = std::fs::read_dir("/usr/lib/postgresql")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|v| {
            Path::new("/usr/lib/postgresql")
                .join(v)
                .join("bin/initdb")
                .is_file()
        })
        .collect();
    let have = installed
        .first()
        .expect("a PostgreSQL under /usr/lib/postgresql")
        .clone();
    let missing = (10..40)
        .map(|v: u32| v.to_string())
        .find(|v| !installed.contains(v))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = |engine: &str, version: &str, out: &str| {
        let mut args = vec!["run"];
        args.extend(SHORT);
        let (engine, version) = (
            format!("database.engine=\"{engine}\""),
            format!("database.version=\"{version}\""),
        );
        args.extend([
            "--db", "local", "--out", out, "--set", &engine, "--set", &version,
        ]);
        dbq(&args)
    };
    let out = dir.path().join("have");
    let o = run("postgres", &have, out.to_str().unwrap());
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let words = summary(&out)["meta"]["server_version"].to_string();
    assert!(words.contains(&format!("PostgreSQL {have}.")), "{words}");
    let o = run("postgres", &missing, dir.path().join("m").to_str().unwrap());
    let e = failed_in_one_line(&o);
    assert!(
        e.contains(&format!("no PostgreSQL {missing} here")) && e.contains(&have),
        "{e}"
    );
    require_mariadb_binaries();
    let o = run("mariadb", "9.9", dir.path().join("mm").to_str().unwrap());
    let e = failed_in_one_line(&o);
    assert!(e.contains("no MariaDB 9.9 here"), "{e}");
}
