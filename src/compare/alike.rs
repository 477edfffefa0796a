//! Whether two results measured the same thing: the same scenario, the same design on the
//! same engine and release, and every run ended as planned. What differs by accident is
//! refused (exit 2, naming the difference) unless allowed key by key; what a pull request
//! changes on purpose — a custom design's files, the library version its workers report — is
//! the change being measured: named, and judged.

use super::Figures;
use crate::backend::design_files::DesignFiles;

/// What a scope's runs measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Identity {
    /// The scenario's `name`, or a capacity search's scenario file name.
    pub scenario: Option<String>,
    /// The design and its engine, by name: `seed on PostgreSQL`, `custom:queue on PostgreSQL`.
    pub design: Option<String>,
    /// The server's engine and release: `PostgreSQL 17`.
    pub server: Option<String>,
    /// A custom design's files (the SHA-256 of them all; a mixture joined by ` + `) and,
    /// from the first run that recorded them, each file's.
    pub files: Option<DesignFiles>,
    /// The queue library the workers said they are (`pgqueuer 1.6.0`), when they are one.
    pub library: Option<String>,
    /// Where the server's data lived (`a Docker volume at …`), when the results say.
    pub storage: Option<String>,
    /// Runs that did not end as planned (interrupted, drain timed out, stopped by an error):
    /// their directory names, or `the run`.
    pub incomplete: Vec<String>,
}

impl Identity {
    /// Adds one run's facts: the first run names the scenario and design; a later run that
    /// names another is recorded as a mixture (`gate + smoke`).
    pub fn add(&mut self, run: Measured, complete: bool, name: &str) {
        merge(&mut self.scenario, run.scenario);
        merge(&mut self.design, run.design);
        merge(&mut self.server, run.server);
        merge(&mut self.library, run.library);
        merge(&mut self.storage, run.storage);
        match (&mut self.files, run.files) {
            (None, files) => self.files = files,
            (Some(have), Some(f)) => {
                let mut sha = Some(have.sha256.clone());
                merge(&mut sha, Some(f.sha256));
                have.sha256 = sha.unwrap_or_default();
            }
            (Some(_), None) => {}
        }
        if !complete {
            self.incomplete.push(name.to_string());
        }
    }
}

/// What one run measured, as its results name it (each absent in results of versions that
/// did not record it).
#[derive(Debug, Clone, Default)]
pub struct Measured {
    pub scenario: Option<String>,
    pub design: Option<String>,
    pub server: Option<String>,
    pub files: Option<DesignFiles>,
    pub library: Option<String>,
    pub storage: Option<String>,
}

fn merge(into: &mut Option<String>, value: Option<String>) {
    match (into.as_mut(), value) {
        (None, v) => *into = v,
        (Some(have), Some(v)) if !have.split(" + ").any(|h| h == v) => {
            have.push_str(" + ");
            have.push_str(&v);
        }
        _ => {}
    }
}

/// What two results may differ in, each a key of `--allow-different`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Key {
    /// The scenario's name: another workload.
    Scenario,
    /// The design by name and shape (variant, claims, engine, claim mode, options).
    Design,
    /// The server's engine and release.
    Server,
    /// A run that did not end as planned.
    Unfinished,
    /// A custom design's files: the change a pull request makes to the team's queue.
    Files,
    /// The library version the workers reported: a pull request's upgrade.
    Library,
}

impl Key {
    /// The keys `--allow-different` takes: the differences refused unless allowed.
    pub const ALLOWABLE: [Key; 4] = [Key::Scenario, Key::Design, Key::Server, Key::Unfinished];

    pub fn as_str(self) -> &'static str {
        match self {
            Key::Scenario => "scenario",
            Key::Design => "design",
            Key::Server => "server",
            Key::Unfinished => "unfinished",
            Key::Files => "files",
            Key::Library => "library",
        }
    }

    /// What a pull request changes on purpose: judged and named, never refused.
    pub fn is_the_change(self) -> bool {
        matches!(self, Key::Files | Key::Library)
    }

    /// A `--allow-different` value.
    pub fn parse(text: &str) -> Result<Key, String> {
        Key::ALLOWABLE
            .into_iter()
            .find(|k| k.as_str() == text.trim())
            .ok_or_else(|| {
                format!(
                    "--allow-different {text}: not a key; allowed: {} (a design's files and a library's version are judged as the change, never refused)",
                    allowable()
                )
            })
    }
}

/// `scenario, design, server, unfinished`.
pub fn allowable() -> String {
    Key::ALLOWABLE.map(Key::as_str).join(", ")
}

/// One way two results differ.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub key: Key,
    /// `scenario: baseline gate, candidate smoke`.
    pub text: String,
}

/// The differences of two results sorted by what `compare` does with each.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sorted {
    /// The change being measured (a design's files, a library's version): named and judged.
    pub changes: Vec<Difference>,
    /// Differences refused by default and allowed by `--allow-different KEY`: warned of.
    pub allowed: Vec<Difference>,
    /// Differences that stop the comparison (exit 2).
    pub refused: Vec<Difference>,
}

impl Sorted {
    /// `found`, each difference where `allowed` (the keys of `--allow-different`) puts it.
    pub fn of(found: Vec<Difference>, allowed: &[Key]) -> Sorted {
        let mut sorted = Sorted::default();
        for d in found {
            if d.key.is_the_change() {
                sorted.changes.push(d);
            } else if allowed.contains(&d.key) {
                sorted.allowed.push(d);
            } else {
                sorted.refused.push(d);
            }
        }
        sorted
    }

    /// The one line that refuses the comparison, when something is refused.
    pub fn refusal(&self) -> Option<String> {
        if self.refused.is_empty() {
            return None;
        }
        let texts: Vec<&str> = self.refused.iter().map(|d| d.text.as_str()).collect();
        let mut keys: Vec<&str> = self.refused.iter().map(|d| d.key.as_str()).collect();
        keys.dedup();
        Some(format!(
            "the two results measured different things: {}; compare like with like, or pass --allow-different {} to judge them anyway",
            texts.join("; "),
            keys.join(",")
        ))
    }
}

/// Every way the two results differ in what they measured, one phrase each; empty when they
/// are alike. Only the scopes both hold are read (the scopes they do not share are not
/// compared at all).
pub fn differences(baseline: &Figures, candidate: &Figures) -> Vec<Difference> {
    let mut found = Vec::new();
    for (scope, base) in baseline {
        let Some(cand) = candidate.get(scope) else {
            continue;
        };
        let at = if scope == "run" || scope == "capacity" {
            String::new()
        } else {
            format!(" ({scope})")
        };
        differ_in(&base.identity, &cand.identity, &at, &mut found);
    }
    found
}

fn differ_in(b: &Identity, c: &Identity, at: &str, found: &mut Vec<Difference>) {
    let mut push = |key: Key, text: String| found.push(Difference { key, text });
    for (key, b, c) in [
        (Key::Scenario, &b.scenario, &c.scenario),
        (Key::Design, &b.design, &c.design),
        (Key::Server, &b.server, &c.server),
        (Key::Library, &b.library, &c.library),
    ] {
        if let (Some(b), Some(c)) = (b, c)
            && (b != c || b.contains(" + "))
        {
            push(
                key,
                format!("{}{at}: baseline {b}, candidate {c}", key.as_str()),
            );
        }
    }
    // Storage compared only where both results recorded it: a flush on a container's layer
    // may take twice as long as on a volume.
    if let (Some(bs), Some(cs)) = (&b.storage, &c.storage)
        && (bs != cs || bs.contains(" + "))
    {
        push(
            Key::Server,
            format!("server{at}: baseline's data on {bs}, candidate's on {cs}"),
        );
    }
    if let (Some(bf), Some(cf)) = (&b.files, &c.files)
        && (bf.sha256 != cf.sha256 || bf.sha256.contains(" + "))
    {
        push(Key::Files, files_changed(bf, cf, at));
    }
    for (side, id) in [("baseline", b), ("candidate", c)] {
        if !id.incomplete.is_empty() {
            push(
                Key::Unfinished,
                format!(
                    "the {side}'s {} did not end as planned{at} (interrupted, drain timed out or stopped by an error)",
                    id.incomplete.join(", ")
                ),
            );
        }
    }
}

/// `files: claim.sql, +new.sql changed (sha256 cc537324f75e → 1a2b3c4d5e6f)`.
fn files_changed(b: &DesignFiles, c: &DesignFiles, at: &str) -> String {
    let changed = c.changed_from(b);
    let short = |sha: &str| {
        sha.split(" + ")
            .map(|s| s[..12.min(s.len())].to_string())
            .collect::<Vec<_>>()
            .join(" + ")
    };
    let which = match changed.is_empty() {
        true => "the design's files".to_string(),
        false => changed.join(", "),
    };
    format!(
        "files{at}: {which} changed (sha256 {} → {})",
        short(&b.sha256),
        short(&c.sha256)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::ScopeFigures;

    fn texts(found: &[Difference]) -> Vec<String> {
        found.iter().map(|d| d.text.clone()).collect()
    }

    fn of(scenario: &str, design: &str, complete: &[bool]) -> Figures {
        on("PostgreSQL 17", scenario, design, complete)
    }

    fn on(server: &str, scenario: &str, design: &str, complete: &[bool]) -> Figures {
        let mut id = Identity::default();
        for (k, ok) in complete.iter().enumerate() {
            let measured = Measured {
                scenario: Some(scenario.into()),
                design: Some(design.into()),
                server: Some(server.into()),
                ..Measured::default()
            };
            id.add(measured, *ok, &format!("r{}", k + 1));
        }
        let scope = ScopeFigures {
            identity: id,
            ..ScopeFigures::default()
        };
        Figures::from([("run".to_string(), scope)])
    }

    #[test]
    fn alike_results_have_no_differences() {
        let a = of("gate", "seed on PostgreSQL", &[true, true]);
        assert!(differences(&a, &a.clone()).is_empty());
    }

    #[test]
    fn another_scenario_design_or_an_unfinished_run_is_named() {
        let base = of("gate", "seed on PostgreSQL", &[true, false]);
        let cand = of("smoke", "batch on PostgreSQL", &[true, true]);
        let found = texts(&differences(&base, &cand));
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0], "scenario: baseline gate, candidate smoke");
        assert_eq!(
            found[1],
            "design: baseline seed on PostgreSQL, candidate batch on PostgreSQL"
        );
        assert!(found[2].starts_with("the baseline's r2 did not end as planned"));
    }

    #[test]
    fn a_side_that_mixes_scenarios_is_named_even_against_the_same_mixture() {
        let mut mixed = of("gate", "seed on PostgreSQL", &[true]);
        let id = &mut mixed.get_mut("run").unwrap().identity;
        let smoke = Measured {
            scenario: Some("smoke".into()),
            design: Some("seed on PostgreSQL".into()),
            server: Some("PostgreSQL 17".into()),
            ..Measured::default()
        };
        id.add(smoke, true, "r2");
        assert_eq!(id.scenario.as_deref(), Some("gate + smoke"));
        let found = differences(&mixed, &mixed.clone());
        assert_eq!(found.len(), 1, "{found:?}");
    }

    #[test]
    fn data_on_other_storage_is_named_only_where_both_results_recorded_it() {
        let stored = |storage: Option<&str>| {
            let mut f = of("gate", "seed on PostgreSQL", &[]);
            let measured = Measured {
                scenario: Some("gate".into()),
                design: Some("seed on PostgreSQL".into()),
                server: Some("PostgreSQL 17".into()),
                storage: storage.map(String::from),
                ..Measured::default()
            };
            f.get_mut("run").unwrap().identity.add(measured, true, "r1");
            f
        };
        let layer = stored(Some("the container's layer (fuse-overlayfs)"));
        let volume = stored(Some("a Docker volume at /var/lib/postgresql/data"));
        let found = differences(&layer, &volume);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].key, Key::Server);
        assert_eq!(
            found[0].text,
            "server: baseline's data on the container's layer (fuse-overlayfs), candidate's on a Docker volume at /var/lib/postgresql/data"
        );
        assert!(differences(&volume, &volume.clone()).is_empty());
        assert!(differences(&stored(None), &volume).is_empty());
    }

    #[test]
    fn another_release_of_the_server_is_named_and_a_patch_level_is_not() {
        let base = on("PostgreSQL 15", "gate", "seed on PostgreSQL", &[true]);
        let cand = on("PostgreSQL 17", "gate", "seed on PostgreSQL", &[true]);
        let found = texts(&differences(&base, &cand));
        assert_eq!(
            found,
            ["server: baseline PostgreSQL 15, candidate PostgreSQL 17"]
        );
        let mixed = on("PostgreSQL 15", "gate", "seed on PostgreSQL", &[true]);
        let mut mixed_id = mixed["run"].identity.clone();
        mixed_id.add(
            Measured {
                server: Some("PostgreSQL 18".into()),
                ..Measured::default()
            },
            true,
            "r2",
        );
        assert_eq!(
            mixed_id.server.as_deref(),
            Some("PostgreSQL 15 + PostgreSQL 18")
        );
        // Results of versions that did not record the server compare as before.
        let old = of("gate", "seed on PostgreSQL", &[true]);
        let mut unrecorded = old.clone();
        unrecorded.get_mut("run").unwrap().identity.server = None;
        assert!(differences(&unrecorded, &old).is_empty());
    }

    #[test]
    fn a_changed_design_or_library_is_the_change_named_file_by_file() {
        let files = |claim: &str| DesignFiles {
            name: "queue".into(),
            sha256: format!("{claim:0<64}"),
            files: [("claim.sql", claim), ("schema.sql", "s")]
                .map(|(f, h)| (f.to_string(), h.to_string()))
                .into(),
        };
        let side = |claim: &str, library: &str| {
            let mut f = of("gate", "custom:queue on PostgreSQL", &[true]);
            let id = &mut f.get_mut("run").unwrap().identity;
            id.files = Some(files(claim));
            id.library = Some(library.into());
            f
        };
        let found = differences(
            &side("aaaa", "pgqueuer 1.6.0"),
            &side("bbbb", "pgqueuer 1.7.0"),
        );
        let keys: Vec<Key> = found.iter().map(|d| d.key).collect();
        assert_eq!(keys, [Key::Library, Key::Files]);
        assert!(found.iter().all(|d| d.key.is_the_change()));
        assert_eq!(
            found[1].text,
            "files: claim.sql changed (sha256 aaaa00000000 → bbbb00000000)"
        );
        assert!(differences(&side("aaaa", "x 1"), &side("aaaa", "x 1")).is_empty());
    }

    #[test]
    fn only_what_differs_by_accident_can_be_allowed() {
        assert_eq!(Key::parse("server"), Ok(Key::Server));
        let refused = Key::parse("files").unwrap_err();
        assert!(
            refused.contains("allowed: scenario, design, server, unfinished"),
            "{refused}"
        );
        assert!(Key::ALLOWABLE.iter().all(|k| !k.is_the_change()));
    }
}
