//! Whether two results measured the same thing: the same scenario, the same design on the
//! same engine, and every run ended as planned. `compare` refuses results that differ
//! (exit 2, naming the difference) unless told to allow it, so that a gate never passes on
//! two unrelated results.

use super::Figures;

/// What a scope's runs measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Identity {
    /// The scenario's `name`, or a capacity search's scenario file name.
    pub scenario: Option<String>,
    /// The design and its engine: `seed on PostgreSQL`.
    pub design: Option<String>,
    /// The server's engine and release: `PostgreSQL 17`.
    pub server: Option<String>,
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

/// Every way the two results differ in what they measured, one phrase each; empty when they
/// are alike. Only the scopes both hold are read (the scopes they do not share are not
/// compared at all).
pub fn differences(baseline: &Figures, candidate: &Figures) -> Vec<String> {
    let mut found = Vec::new();
    for (scope, base) in baseline {
        let Some(cand) = candidate.get(scope) else {
            continue;
        };
        let (b, c) = (&base.identity, &cand.identity);
        let at = if scope == "run" || scope == "capacity" {
            String::new()
        } else {
            format!(" ({scope})")
        };
        for (what, b, c) in [
            ("scenario", &b.scenario, &c.scenario),
            ("design", &b.design, &c.design),
            ("server", &b.server, &c.server),
        ] {
            if let (Some(b), Some(c)) = (b, c)
                && (b != c || b.contains(" + "))
            {
                found.push(format!("{what}{at}: baseline {b}, candidate {c}"));
            }
        }
        for (side, id) in [("baseline", b), ("candidate", c)] {
            if !id.incomplete.is_empty() {
                found.push(format!(
                    "the {side}'s {} did not end as planned{at} (interrupted, drain timed out or stopped by an error)",
                    id.incomplete.join(", ")
                ));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::ScopeFigures;

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
        let found = differences(&base, &cand);
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
        };
        id.add(smoke, true, "r2");
        assert_eq!(id.scenario.as_deref(), Some("gate + smoke"));
        let found = differences(&mixed, &mixed.clone());
        assert_eq!(found.len(), 1, "{found:?}");
    }

    #[test]
    fn another_release_of_the_server_is_named_and_a_patch_level_is_not() {
        let base = on("PostgreSQL 15", "gate", "seed on PostgreSQL", &[true]);
        let cand = on("PostgreSQL 17", "gate", "seed on PostgreSQL", &[true]);
        let found = differences(&base, &cand);
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
}
