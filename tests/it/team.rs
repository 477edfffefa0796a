//! The gate from a team's side: a scratch repository made here, not this one — a design
//! directory of its own (the seed's SQL, as a team starts), a scenario of its own, a base
//! commit and a pull request — gated the way GitHub's runner runs action.yml: its steps read
//! from the file, their `${{ … }}` filled in, their `run:` lines run with bash in the team's
//! checkout, the tool found where the cache step would have restored it. A pull request that
//! drops the pending index fails with 99, one that adds a comment passes, and a library
//! worker whose pull request slows it fails too. The action and the documented workflows are
//! checked against the GitHub Actions schemas check-jsonschema carries.

use crate::support::{said as text, shared_url};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn git(repo: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(["-c", "user.email=team@example.com", "-c", "user.name=team"])
        .args(args)
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn project() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A team's repository: `files` (path, text) committed as its main branch; its commit.
fn team_repo(root: &Path, files: &[(String, String)]) -> String {
    std::fs::create_dir_all(root).unwrap();
    git(root, &["init", "-q", "-b", "main"]);
    for (path, text) in files {
        let at = root.join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "our queue"]);
    git(root, &["rev-parse", "HEAD"])
}

/// A pull request on top of main: `edit` changes the checkout, then it is committed.
fn pull_request(root: &Path, branch: &str, edit: impl FnOnce(&Path)) {
    git(root, &["checkout", "-q", "-b", branch, "main"]);
    edit(root);
    git(root, &["commit", "-q", "-am", branch]);
}

fn edit(path: &Path, f: impl FnOnce(String) -> String) {
    let was = std::fs::read_to_string(path).unwrap();
    std::fs::write(path, f(was)).unwrap();
}

/// The files of examples/team-gate (the two halves of the gate and the workflow), with the
/// seed's SQL as the team's `queue/` design directory: a team's repository as it starts.
fn team_files() -> Vec<(String, String)> {
    let mut files = Vec::new();
    let template = project().join("examples/team-gate");
    for path in files_under(&template) {
        let name = path.strip_prefix(&template).unwrap().display().to_string();
        files.push((name, std::fs::read_to_string(&path).unwrap()));
    }
    let seed = project().join("scenarios/custom-seed");
    for f in [
        "schema.sql",
        "claim.sql",
        "complete.sql",
        "enqueue.sql",
        "fail.sql",
    ] {
        let text = std::fs::read_to_string(seed.join(f)).unwrap();
        files.push((format!("queue/{f}"), text));
    }
    files
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        match path.is_dir() {
            true => found.extend(files_under(&path)),
            false => found.push(path),
        }
    }
    found
}

/// The inputs examples/team-gate's workflow gives the action, with the suite's server (for
/// the container of the release it names) and `more`.
fn workflow_inputs(more: &[(&str, &str)]) -> Vec<(String, String)> {
    let workflow = yaml(&project().join("examples/team-gate/.github/workflows/queue-gate.yml"));
    let steps = workflow["jobs"]["gate"]["steps"].as_array().unwrap();
    let gate = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.contains("/dbq-bench@"))
        })
        .expect("the workflow uses the action");
    let mut inputs: Vec<(String, String)> = gate["with"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| *k != "server-version")
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect();
    inputs.push(("database-url".into(), shared_url().into()));
    inputs.extend(more.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    inputs
}

/// The interpreter of check-jsonschema (scripts/test installs it), which also reads YAML.
fn check_jsonschema() -> PathBuf {
    let path = std::env::var("DBQ_CHECK_JSONSCHEMA").unwrap_or_else(|_| {
        panic!(
            "missing prerequisite: DBQ_CHECK_JSONSCHEMA, check-jsonschema from PyPI \
             (python3 -m venv target/ci-tools && target/ci-tools/bin/pip install check-jsonschema); \
             scripts/test sets it up"
        )
    });
    PathBuf::from(path)
}

/// A YAML file as JSON, read by the YAML parser check-jsonschema brings (ruamel.yaml).
fn yaml(path: &Path) -> Value {
    let python = check_jsonschema().with_file_name("python");
    let o = Command::new(python)
        .args([
            "-c",
            "import json, sys; from ruamel.yaml import YAML; print(json.dumps(YAML(typ='safe').load(open(sys.argv[1]))))",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// GitHub's `${{ … }}` in `value`, from what the runner knows of this run.
fn expand(value: &str, known: &[(String, String)]) -> String {
    let mut out = value.to_string();
    for (expr, v) in known {
        out = out.replace(&format!("${{{{ {expr} }}}}"), v);
    }
    assert!(
        !out.contains("${{"),
        "an expression the test does not know: {out}"
    );
    out
}

/// Runs action.yml's steps in `repo` as GitHub's runner would on a pull request whose base
/// is `base`, with `inputs` (the rest at their defaults); the cache step restores this
/// build of dbq-bench. The gate step's output.
fn action(repo: &Path, base: &str, inputs: &[(String, String)]) -> Output {
    let spec = yaml(&project().join("action.yml"));
    let temp = tempfile::tempdir().unwrap();
    let mut known = vec![(
        "github.event.pull_request.base.sha".to_string(),
        base.to_string(),
    )];
    for (name, input) in spec["inputs"].as_object().unwrap() {
        let given = inputs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.to_string());
        let default = input["default"].as_str().unwrap_or("").to_string();
        let value = given.unwrap_or_else(|| expand(&default, &known));
        known.push((format!("inputs.{name}"), value));
    }
    let mut last = None;
    for step in spec["runs"]["steps"].as_array().unwrap() {
        if let Some(uses) = step["uses"].as_str() {
            assert!(uses.starts_with("actions/cache@"), "unexpected step {uses}");
            let dir = expand(step["with"]["path"].as_str().unwrap(), &known);
            let bin = Path::new(&dir).join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            std::fs::copy(env!("CARGO_BIN_EXE_dbq-bench"), bin.join("dbq-bench")).unwrap();
            continue;
        }
        let output_file = temp.path().join("output");
        std::fs::write(&output_file, "").unwrap();
        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
            .arg(step["run"].as_str().unwrap())
            .current_dir(repo)
            .env("GITHUB_ACTION_PATH", project())
            .env("GITHUB_WORKSPACE", repo)
            .env("GITHUB_OUTPUT", &output_file)
            .env("RUNNER_TEMP", temp.path())
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("DATABASE_URL");
        if let Ok(wheels) = std::env::var("DBQ_WHEELS") {
            cmd.env("PIP_NO_INDEX", "1").env("PIP_FIND_LINKS", wheels);
        }
        for (k, v) in step["env"].as_object().into_iter().flatten() {
            cmd.env(k, expand(v.as_str().unwrap(), &known));
        }
        let o = cmd.output().unwrap();
        if let Some(id) = step["id"].as_str() {
            for line in std::fs::read_to_string(&output_file).unwrap().lines() {
                let (k, v) = line.split_once('=').unwrap();
                known.push((format!("steps.{id}.outputs.{k}"), v.to_string()));
            }
        }
        if step["id"] != "gate" {
            assert!(o.status.success(), "{}: {}", step["name"], text(&o));
        }
        last = Some(o);
    }
    last.unwrap()
}

/// The block of docs/ci.md that follows the line starting with `marker`.
fn documented_block(marker: &str) -> String {
    let page = std::fs::read_to_string(project().join("docs/ci.md")).unwrap();
    let after = page.split_once(marker).expect("docs/ci.md has the block").1;
    let block = after.split_once("```sh\n").unwrap().1;
    block.split_once("```").unwrap().0.to_string()
}

#[test]
fn a_teams_pull_request_that_drops_its_index_fails_and_a_comment_passes() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("acme");
    let base = team_repo(&repo, &team_files());

    // The pull request drops the partial index the claim's ORDER BY needs, and is gated by
    // docs/ci.md's one command, run as written.
    pull_request(&repo, "drop-index", |r| {
        edit(&r.join("queue/schema.sql"), |s| {
            s[..s.find("CREATE INDEX idx_job_queue_pending").unwrap()].to_string()
        })
    });
    let documented = documented_block("<!-- run by tests/it/team.rs");
    let slow = run_documented(&documented, &repo);
    let said = text(&slow);
    assert_eq!(slow.status.code(), Some(99), "{documented}\n{said}");
    assert!(
        said.contains("regression: queue-gate: claim_p50_ms")
            || said.contains("regression: queue-gate: throughput_per_s"),
        "{said}"
    );
    assert!(
        said.contains("changed: files: schema.sql changed (sha256 "),
        "the change is named: {said}"
    );
    let verdict: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.join("results/gate/gate.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(verdict["verdict"], "regressed", "{verdict}");
    assert_eq!(verdict["pairs"], 5, "the documented default");

    // A comment in claim.sql changes the design's hash, not its speed: judged, and passed.
    // (At a false-alarm rate of 0.1%, so that the suite's own load on the shared server
    // cannot fail it by chance; a figure too noisy to judge passes with a warning.)
    pull_request(&repo, "comment", |r| {
        edit(&r.join("queue/claim.sql"), |s| {
            format!("-- Claims the next job.\n{s}")
        })
    });
    let inputs = workflow_inputs(&[
        ("pairs", "3"),
        ("false-alarm-rate", "0.1%"),
        ("export-github-benchmark", "history.json"),
        ("export-bmf", "history.bmf.json"),
    ]);
    let same = action(&repo, &base, &inputs);
    let said = text(&same);
    assert_eq!(same.status.code(), Some(0), "{said}");
    assert!(said.contains("changed: files: claim.sql changed"), "{said}");
    // The history's series is named by the scenario and the design, not by a path or hash.
    let history: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join("history.json")).unwrap()).unwrap();
    let names: Vec<&str> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"queue-gate: custom:queue on PostgreSQL — claim_p50_ms")
            && names.contains(&"queue-latency: custom:queue on PostgreSQL — e2e_p99_ms"),
        "{names:?}"
    );
    assert!(
        history[0]["extra"]
            .as_str()
            .unwrap()
            .contains("design files sha256 "),
        "{history}"
    );
    // Both files in the shapes the tools document.
    let schemas = project().join("tests/fixtures/schemas");
    for (file, schema) in [
        ("history.json", "github-action-benchmark.schema.json"),
        ("history.bmf.json", "bmf.schema.json"),
    ] {
        let schema = schemas.join(schema);
        check_schema(
            &["--schemafile", schema.to_str().unwrap()],
            &[repo.join(file)],
        );
    }
    let bmf: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join("history.bmf.json")).unwrap())
            .unwrap();
    assert!(
        bmf["queue-gate: custom:queue on PostgreSQL"]["claim_p50_ms"]["value"].is_number(),
        "{bmf}"
    );
}

fn dbq(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(args)
        .current_dir(dir)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("DATABASE_URL")
        .output()
        .unwrap()
}

#[test]
fn what_differs_by_accident_is_refused_before_anything_is_measured() {
    let dir = tempfile::tempdir().unwrap();
    let (base, cand) = (dir.path().join("base"), dir.path().join("cand"));
    let files = team_files();
    team_repo(&base, &files);
    let mut files = files;
    for (path, text) in files.iter_mut() {
        if path == "bench/queue-gate.toml" {
            assert!(text.contains("name = \"queue-gate\""), "{text}");
            *text = text.replace("name = \"queue-gate\"", "name = \"other\"");
        }
    }
    let latency = files
        .iter()
        .find(|(p, _)| p.ends_with("queue-latency.toml"))
        .unwrap();
    files.push(("bench/only-here.toml".into(), latency.1.clone()));
    team_repo(&cand, &files);
    let gate = |extra: &[&str]| {
        let mut args = vec!["gate", "base", "cand", "--database-url", shared_url()];
        args.extend(extra);
        dbq(&args, dir.path())
    };
    let o = gate(&["--scenario", "bench/queue-gate.toml"]);
    crate::support::assert_bad_input(
        &o,
        "another scenario name",
        "scenario: baseline queue-gate, candidate other; compare like with like, or pass --allow-different scenario to judge them anyway (decided before measuring)",
    );
    assert!(
        !dir.path().join("results").exists(),
        "nothing was measured or written"
    );
    let o = gate(&["--scenario", "bench/only-here.toml"]);
    crate::support::assert_bad_input(
        &o,
        "a scenario on one side",
        "not found in the base checkout",
    );
    let absolute = base.join("bench/queue-gate.toml");
    let o = gate(&["--scenario", absolute.to_str().unwrap()]);
    crate::support::assert_bad_input(&o, "an absolute path", "relative to the checkouts");
    let o = gate(&[
        "--scenario",
        "bench/queue-gate.toml",
        "--allow-different",
        "files",
    ]);
    crate::support::assert_bad_input(
        &o,
        "an unknown key",
        "allowed: scenario, design, server, unfinished",
    );
    let o = gate(&["--scenario", "bench/queue-gate.toml", "--pairs", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = gate(&["--scenario", "bench/queue-gate.toml", "--allow-different"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a bare flag names no key: {}",
        text(&o)
    );
}

/// check-jsonschema's verdict on `files` under `schema` (a built-in one, or a file).
fn check_schema(schema: &[&str], files: &[PathBuf]) {
    let o = Command::new(check_jsonschema())
        .args(schema)
        .args(files)
        .output()
        .unwrap();
    assert!(o.status.success(), "{schema:?} {files:?}: {}", text(&o));
}

/// The ```yaml blocks of a Markdown page that are whole workflows (they have `jobs:`).
fn workflows_in(page: &Path, into: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(page).unwrap();
    let mut found = Vec::new();
    for (k, block) in text.split("```yaml\n").skip(1).enumerate() {
        let body = block.split("```").next().unwrap();
        if body.lines().any(|l| l.starts_with("jobs:")) {
            let file = into.join(format!("workflow-{k}.yml"));
            std::fs::write(&file, body).unwrap();
            found.push(file);
        }
    }
    found
}

#[test]
fn the_action_and_every_documented_workflow_pass_githubs_schemas() {
    check_schema(
        &["--builtin-schema", "vendor.github-actions"],
        &[project().join("action.yml")],
    );
    let dir = tempfile::tempdir().unwrap();
    let mut workflows = workflows_in(&project().join("docs/ci.md"), dir.path());
    workflows.push(project().join("examples/team-gate/.github/workflows/queue-gate.yml"));
    assert!(
        workflows.len() >= 2,
        "docs/ci.md shows the team's workflows: {workflows:?}"
    );
    // The page shows examples/team-gate's workflow as it is.
    let lines = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    let example = project().join("examples/team-gate/.github/workflows/queue-gate.yml");
    let shown = std::fs::read_to_string(&workflows[0]).unwrap();
    assert_eq!(
        lines(&shown),
        lines(&std::fs::read_to_string(example).unwrap()),
        "docs/ci.md's first workflow is examples/team-gate's"
    );
    for entry in std::fs::read_dir(project().join(".github/workflows")).unwrap() {
        workflows.push(entry.unwrap().path());
    }
    check_schema(&["--builtin-schema", "vendor.github-workflows"], &workflows);
    // The checks can fail: a step with a misspelt key is refused.
    let broken = dir.path().join("broken.yml");
    let action = std::fs::read_to_string(project().join("action.yml")).unwrap();
    std::fs::write(&broken, action.replacen("shell: bash", "shel: bash", 1)).unwrap();
    let o = Command::new(check_jsonschema())
        .args(["--builtin-schema", "vendor.github-actions"])
        .arg(&broken)
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", text(&o));
}

/// A team whose workers are a queue library's (examples/procrastinate, its glue beside it as
/// the team would vendor it): each side installs its pinned requirements into an environment
/// of its own, by docs/ci.md's command run as written (from the suite's wheelhouse, offline).
#[test]
fn a_library_workers_pull_request_that_lowers_its_concurrency_fails() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("acme");
    let examples = project().join("examples");
    let mut files: Vec<(String, String)> = Vec::new();
    for (from, to) in [("procrastinate", "queue"), ("python", "python")] {
        for path in files_under(&examples.join(from)) {
            let name = path.file_name().unwrap().to_string_lossy();
            if !name.ends_with(".pyc") {
                files.push((
                    format!("{to}/{name}"),
                    std::fs::read_to_string(&path).unwrap(),
                ));
            }
        }
    }
    for (path, text) in files.iter_mut() {
        if path == "queue/design.toml" {
            let command = "command = [\"python3\", \"worker.py\"]";
            assert!(
                text.contains(command) && text.contains("concurrency = 1"),
                "{text}"
            );
            *text = text
                .replace(
                    command,
                    "command = [\"../.venv/bin/python\", \"worker.py\"]",
                )
                .replace("concurrency = 1", "concurrency = 4");
        }
    }
    files.push(("bench/queue-gate.toml".into(), library_scenario()));
    files.push((".gitignore".into(), ".venv\n".into()));
    let base = team_repo(&repo, &files);
    pull_request(&repo, "lower-concurrency", |r| {
        edit(&r.join("queue/design.toml"), |s| {
            s.replace("concurrency = 4", "concurrency = 1")
        })
    });
    let documented = documented_block("<!-- run by tests/it/team.rs, in a procrastinate");
    let slow = run_documented(&documented, &repo);
    let said = text(&slow);
    assert_eq!(slow.status.code(), Some(99), "{documented}\n{said}");
    assert!(
        said.contains("regression: workers-gate: throughput_per_s")
            || said.contains("regression: workers-gate: completed_per_s"),
        "{said}"
    );
    assert!(
        said.contains("changed: files: design.toml changed"),
        "{said}"
    );
    let run = repo.join("results/gate/workers-gate/cand/r1/summary.json");
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(run).unwrap()).unwrap();
    let library = summary["library_workers"][0]["library"].as_str().unwrap();
    assert!(library.starts_with("procrastinate 3."), "{summary}");

    // A pull request whose workers cannot start fails at its first run, saying why: gated by
    // the action, with the documented command's `--prepare` as its `prepare` input.
    pull_request(&repo, "broken-worker", |r| {
        edit(&r.join("queue/design.toml"), |s| {
            s.replace("\"worker.py\"]", "\"no-such-worker.py\"]")
        })
    });
    let prepare = documented.split("--prepare '").nth(1).unwrap();
    let prepare = prepare.split('\'').next().unwrap();
    let inputs = [
        ("scenario", "bench/queue-gate.toml"),
        ("database-url", shared_url()),
        ("pairs", "3"),
        ("prepare", prepare),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    let broken = action(&repo, &base, &inputs);
    let said = text(&broken);
    assert_eq!(broken.status.code(), Some(99), "{said}");
    assert!(
        said.contains("regression: workers-gate: the candidate's r1 stopped on an error: worker [../.venv/bin/python no-such-worker.py]"),
        "{said}"
    );
}

/// A docs/ci.md block run with bash in `repo` as written: dbq-bench on the PATH, the suite's
/// server as DATABASE_URL, pip installing from the suite's wheelhouse.
fn run_documented(block: &str, repo: &Path) -> Output {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_dbq-bench")).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let wheels = std::env::var("DBQ_WHEELS").unwrap_or_else(|_| {
        panic!("missing prerequisite: DBQ_WHEELS, a wheelhouse of examples/procrastinate's requirements; scripts/test sets it up")
    });
    Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", block])
        .current_dir(repo)
        .env("PATH", path)
        .env("DATABASE_URL", shared_url())
        .env("PIP_NO_INDEX", "1")
        .env("PIP_FIND_LINKS", wheels)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap()
}

/// The library's backlog: the gate's throughput half with four worker processes and a
/// 20 ms handler, so that how many jobs each runs at once, not Python's own time, sets the
/// rate.
fn library_scenario() -> String {
    let half = project().join("examples/team-gate/bench/queue-gate.toml");
    let mut text = std::fs::read_to_string(half).unwrap();
    for (from, to) in [
        ("name = \"queue-gate\"", "name = \"workers-gate\""),
        ("prefill = 3000", "prefill = 1000"),
        ("fixed = \"2ms\"", "fixed = \"20ms\""),
        ("poll_interval = \"50ms\"", "poll_interval = \"100ms\""),
        ("timeout = \"30s\"", "timeout = \"60s\""),
    ] {
        assert!(text.contains(from), "examples/team-gate changed: {from}");
        text = text.replace(from, to);
    }
    text
}

/// Ctrl-C during the pairs: exit 130, the runs so far kept, the server the gate started
/// stopped and removed.
#[test]
fn ctrl_c_stops_the_gate_keeps_its_runs_and_removes_its_server() {
    crate::support::require_local_binaries();
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("acme");
    team_repo(&repo, &team_files());
    let out = dir.path().join("out");
    let (repo_s, out_s) = (repo.to_str().unwrap(), out.to_str().unwrap());
    let args = [
        "gate",
        repo_s,
        repo_s,
        "--scenario",
        "bench/queue-gate.toml",
        "--db",
        "local",
        "--out",
        out_s,
    ];
    let (status, said) = crate::support::interrupt_saying(
        &args,
        "pair 1/5: queue-gate base",
        std::time::Duration::from_millis(500),
    );
    assert_eq!(status.code(), Some(130), "{said}");
    assert!(said.contains("gate interrupted after 0 pair(s)"), "{said}");
    assert!(
        out.join("queue-gate/base/r1/summary.json").is_file(),
        "{said}"
    );
    let data = said
        .split("local server in ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no local server named: {said}"));
    assert!(
        crate::support::processes_mentioning(data).is_empty(),
        "the server is stopped: {said}"
    );
    assert!(
        !Path::new(data).exists(),
        "its data directory is removed: {data}"
    );
}
