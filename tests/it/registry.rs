//! Every engine in the registry, walked: its facts agree with its driver, the servers the
//! harness starts for it and the capabilities its links offer — so a new engine cannot
//! forget a part. Each engine is reached on the server the tests share (the in-memory one
//! through `memory://`, the same path as the others).

use crate::support::{SMALL, plan, shared_server, stdout_of};
use dbq_bench::backend::engine::ALL_FAULTS;
use dbq_bench::backend::{self, ClaimMode, Engine, NewJob};
use std::path::Path;

#[test]
fn every_engine_is_one_folder_and_one_registry_line() {
    for &e in Engine::ALL {
        let facts = e.facts();
        let driver = e.driver();
        assert!(std::ptr::eq(driver.facts(), facts), "{}", facts.name);
        assert_eq!(Engine::named(facts.name), Some(e));
        assert_eq!(
            serde_json::to_value(e).unwrap(),
            serde_json::Value::from(facts.name),
            "the scenario spelling is the folder's name for it"
        );
        assert_eq!(Engine::of_scheme(facts.schemes[0]), Some(e));
        assert!(facts.supports.variants.contains(&"seed"), "{}", facts.name);
        assert!(
            facts.supports.faults.iter().all(|f| ALL_FAULTS.contains(f)),
            "{}: a fault the harness does not know",
            facts.name
        );
        // Servers the harness starts, with what providers and tests need to have them.
        assert_eq!(
            facts.install.is_some(),
            driver.servers().is_some(),
            "{}: an image and package exactly when the harness starts servers",
            facts.name
        );
        if let Some(install) = &facts.install {
            assert!(
                Path::new(install.build_script).is_file(),
                "{}: {} is missing",
                facts.name,
                install.build_script
            );
            assert!(!install.local_install.is_empty());
            // scripts/test builds each image its script names, under the variable the
            // script's name gives: the facts must say the same.
            let script = std::fs::read_to_string(install.build_script).unwrap();
            let default_tag = format!("tag=${{1:-{}}}", install.built_tag);
            assert!(
                script.lines().any(|l| l == default_tag),
                "{}: {} does not build {} by default",
                facts.name,
                install.build_script,
                install.built_tag
            );
            let stem = install
                .build_script
                .trim_start_matches("docker/build-")
                .trim_end_matches("-image.sh");
            assert_eq!(
                install.variable,
                format!("DBQ_{}_IMAGE", stem.to_uppercase()),
                "{}",
                facts.name
            );
        }
    }
}

/// What each engine's facts declare for validation is what its links offer, and a job goes
/// through enqueue, claim and finish on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_capabilities_declared_are_the_ones_offered() {
    let p = plan(SMALL, &[]);
    for &e in Engine::ALL {
        let supports = &e.facts().supports;
        let queue = crate::support::fresh_queue(e, &p, supports.completion_audit).await;
        let mut link = queue.connect("registry").await.unwrap();
        let name = e.as_str();
        assert_eq!(link.bystander().is_some(), supports.bystander, "{name}");
        assert_eq!(
            link.planner().is_some(),
            supports.planner_statistics,
            "{name}"
        );
        assert_eq!(link.outbox().is_some(), supports.outbox, "{name}");
        let offers = |fault: &str| supports.faults.contains(&fault);
        assert_eq!(link.sessions().is_some(), offers("kill_backends"), "{name}");
        assert_eq!(
            link.mvcc().is_some(),
            offers("idle_in_transaction"),
            "{name}"
        );
        assert_eq!(link.vacuum().is_some(), offers("delay_vacuum"), "{name}");
        assert_eq!(link.readers().is_some(), offers("active_readers"), "{name}");
        assert_eq!(
            link.planner().is_some(),
            offers("analyze"),
            "{name}: the analyze fault is the planner's"
        );
        // A server that tells a session's state is asked about a frozen worker's claim in a
        // transaction (one that cannot, a broker, leaves the workers' reports to say).
        if link.session_states().is_some() {
            assert!(
                offers("freeze_workers") && offers("kill_backends"),
                "{name}"
            );
        }
        assert_eq!(link.audit().is_some(), supports.completion_audit, "{name}");
        assert_eq!(link.group().is_some(), supports.group, "{name}");
        assert_eq!(link.provenance().is_some(), supports.provenance, "{name}");
        let job = NewJob {
            job_type: "registry".into(),
            payload: "{}".into(),
            priority: 0,
        };
        let id = link.enqueue(&job).await.unwrap();
        let mode = if supports.claim_in_transaction {
            ClaimMode::InTransaction
        } else {
            ClaimMode::Committed
        };
        let mut claimed = Vec::new();
        for _ in 0..50 {
            claimed = link.claim(mode).await.unwrap();
            if !claimed.is_empty() {
                break;
            }
            link.idle(mode).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(
            claimed.iter().map(|j| j.id).collect::<Vec<_>>(),
            [id],
            "{name}"
        );
        link.finish(mode, &[id]).await.unwrap();
        let again = link.claim(mode).await.unwrap();
        assert!(again.is_empty(), "{name}: a finished job claimed again");
        link.idle(mode).await.unwrap();
        link.close().await;
        queue.drop_namespace().await.unwrap();
        backend::release(&*queue);
    }
}

/// The in-memory queue runs a whole scenario through the url provider, as a server would:
/// the harness's own ceiling with every job proven.
#[test]
fn a_run_on_the_in_memory_queue_is_proven_like_any_other() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(["run", "scenarios/smoke.toml", "--db", "url"])
        .args(["--database-url", shared_server(Engine::Memory)])
        .args(["--set", "database.engine=\"memory\""])
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = stdout_of(&out, 0);
    assert!(
        stdout.contains("lost 0") || stdout.contains("lost: 0"),
        "{stdout}"
    );
}

/// Adding an engine is its folder and one line: a copy of the in-memory queue's folder
/// renamed `toy` (its facts' name and scheme changed inside the folder) and one registry line
/// make a crate that compiles, with exactly one line changed outside the folder. Checked on
/// a copy of the sources in a directory of the test's own (`cargo check`, offline, its own
/// target directory under target/ so that later runs reuse what it built).
#[test]
fn a_new_engine_is_its_folder_and_one_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let copy = tempfile::tempdir().unwrap();
    for file in ["Cargo.toml", "Cargo.lock", "build.rs"] {
        std::fs::copy(root.join(file), copy.path().join(file)).unwrap();
    }
    for dir in ["src", "migrations", "benches"] {
        copy_tree(&root.join(dir), &copy.path().join(dir));
    }
    let backend = copy.path().join("src/backend");
    copy_tree(&backend.join("memory"), &backend.join("toy"));
    let facts = backend.join("toy/facts.rs");
    let text = std::fs::read_to_string(&facts).unwrap();
    let text = text
        .replace("name: \"memory\"", "name: \"toy\"")
        .replace("schemes: &[\"memory\"]", "schemes: &[\"toy\"]");
    std::fs::write(&facts, text).unwrap();
    let registry_file = backend.join("mod.rs");
    let before = std::fs::read_to_string(&registry_file).unwrap();
    let line = "    Memory => memory,\n";
    assert!(before.contains(line), "the registry's memory line");
    let after = before.replace(line, &format!("{line}    Toy => toy,\n"));
    std::fs::write(&registry_file, &after).unwrap();
    // One line changed outside the folder: every other file is as it was.
    let changed = changed_lines(&root.join("src"), &copy.path().join("src"), "backend/toy");
    assert_eq!(
        changed,
        ["src/backend/mod.rs: +    Toy => toy,"],
        "{changed:#?}"
    );
    let out = std::process::Command::new(env!("CARGO"))
        .args(["check", "--lib", "--offline", "--quiet"])
        .current_dir(copy.path())
        .env("CARGO_TARGET_DIR", root.join("target/throwaway-engine"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the crate with a toy engine does not compile:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Copies a directory tree.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// The lines that differ between two source trees (`file: +line` or `file: -line`), leaving
/// out the folder `except` (relative to the trees).
fn changed_lines(old: &Path, new: &Path, except: &str) -> Vec<String> {
    let mut changed = Vec::new();
    let mut files = Vec::new();
    list_files(new, new, &mut files);
    for rel in files {
        if rel.starts_with(except) {
            continue;
        }
        let theirs = std::fs::read_to_string(new.join(&rel)).unwrap_or_default();
        let ours = std::fs::read_to_string(old.join(&rel)).unwrap_or_default();
        let name = format!("src/{}", rel.display());
        let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
        changed.extend(
            b.iter()
                .filter(|l| !a.contains(l))
                .map(|l| format!("{name}: +{l}")),
        );
        changed.extend(
            a.iter()
                .filter(|l| !b.contains(l))
                .map(|l| format!("{name}: -{l}")),
        );
    }
    changed
}

/// Every file under `dir`, relative to `base`.
fn list_files(base: &Path, dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            list_files(base, &path, out);
        } else {
            out.push(path.strip_prefix(base).unwrap().to_path_buf());
        }
    }
}
