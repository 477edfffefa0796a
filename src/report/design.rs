//! The design a result measured, recorded whole: the engine, the variant and every option
//! that shapes it. Every comparison of results (`compare`, matrix tables, a capacity cited
//! by a run) holds two records side by side, so "the same design" means the same record.

pub use super::setup::ClaimRule;
use super::setup::RunSetup;
use crate::backend::Engine;
use crate::backend::design_files::DesignFiles;
use crate::backend::{DesignInfo, WakeUp};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesignRecord {
    pub engine: Engine,
    /// `seed`, `batch`, …, `custom`.
    pub variant: String,
    /// Jobs one claim takes at most.
    pub claim_batch: u32,
    pub claim_mode: ClaimRule,
    /// The queue table's fillfactor, when the scenario set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fillfactor: Option<u32>,
    #[serde(default)]
    pub unlogged: bool,
    /// A custom design's directory, and the SHA-256 of its files (what tells two versions of
    /// one directory apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_dir: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_sha256: Option<String>,
    /// A custom design's name (design.toml's `name`, else its directory's): what benchmarks
    /// and comparisons call it, the same across edits and checkouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_name: Option<String>,
    /// A custom design's files, each with its SHA-256: what a change to the design changed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub custom_files: BTreeMap<String, String>,
    /// How long an idle consumer sleeps before it looks for a new job (`consumers.poll_interval`),
    /// when nothing wakes it sooner; `None` when enqueues notify it. The regression gate
    /// leaves end-to-end latency ungated when this wait is most of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_poll_ms: Option<u64>,
}

impl DesignRecord {
    /// The design of a run set up as `setup`, as its backend installed it.
    pub fn of(setup: &RunSetup, installed: &DesignInfo) -> DesignRecord {
        DesignRecord {
            idle_poll_ms: match installed.wake_up {
                WakeUp::Poll => Some(setup.poll_interval.as_millis() as u64),
                WakeUp::Notify => None,
            },
            ..DesignRecord::planned(setup, installed.claim_batch, installed.files.as_ref())
        }
    }

    /// The design a run set up as `setup` will install, known before it is: claims of
    /// `claim_batch`, a custom design's `files` as read from its directory. (No idle poll:
    /// that is the installed design's wake-up.)
    pub fn planned(setup: &RunSetup, claim_batch: u32, files: Option<&DesignFiles>) -> Self {
        let v = &setup.design;
        DesignRecord {
            engine: setup.engine,
            variant: v.variant.clone(),
            claim_batch,
            claim_mode: setup.claim_rule,
            fillfactor: v.fillfactor,
            unlogged: v.unlogged,
            custom_dir: v.custom_dir.clone(),
            custom_sha256: files.map(|f| f.sha256.clone()),
            custom_name: files.map(|f| f.name.clone()),
            custom_files: files.map(|f| f.files.clone()).unwrap_or_default(),
            idle_poll_ms: None,
        }
    }

    /// The design in a few words: `batch ×10 on PostgreSQL`, with what differs from the
    /// defaults (`claims committed`, `fillfactor 70`, `unlogged`, a custom directory).
    pub fn label(&self) -> String {
        let mut words = vec![self.variant.clone()];
        if self.claim_batch > 1 {
            words.push(format!("×{}", self.claim_batch));
        }
        words.push(format!("on {}", self.engine.label()));
        match self.claim_mode {
            ClaimRule::Committed => words.push("claims committed".into()),
            ClaimRule::Library => words.push("the library's own workers".into()),
            ClaimRule::InTransaction => {}
        }
        if let Some(ff) = self.fillfactor {
            words.push(format!("fillfactor {ff}"));
        }
        if self.unlogged {
            words.push("unlogged".into());
        }
        if let (Some(dir), Some(sha)) = (&self.custom_dir, &self.custom_sha256) {
            words.push(format!("({dir}, sha256 {})", &sha[..12.min(sha.len())]));
        }
        words.join(" ")
    }

    /// The design as comparisons and benchmark series name it: [`label`](Self::label) with a
    /// custom design's name (`custom:queue on PostgreSQL`) instead of its path and hash, so
    /// that an edit to its files or another checkout of them is the same design, changed.
    pub fn identity(&self) -> String {
        let plain = DesignRecord {
            variant: match &self.custom_name {
                Some(name) => format!("{}:{name}", self.variant),
                None => self.variant.clone(),
            },
            custom_dir: None,
            custom_sha256: None,
            ..self.clone()
        };
        plain.label()
    }

    /// The design in a sentence: `the batch design (claims of 10) on PostgreSQL`.
    pub fn phrase(&self) -> String {
        let batch = match self.claim_batch {
            n if n > 1 => format!(" (claims of {n})"),
            _ => String::new(),
        };
        let mut phrase = format!(
            "the {} design{batch} on {}",
            self.variant,
            self.engine.label()
        );
        let rest = self.label();
        let extras = rest
            .split_once(self.engine.label())
            .map_or("", |(_, r)| r.trim());
        match extras {
            "" => {}
            e if e.starts_with('(') => phrase.push_str(&format!(" {e}")),
            e => phrase.push_str(&format!(", {e}")),
        }
        phrase
    }

    /// What differs between two designs, as `key: this vs that`; empty when they are one.
    pub fn differences(&self, other: &DesignRecord) -> Vec<String> {
        let mut out = Vec::new();
        let mut differ = |key: &str, a: String, b: String| {
            if a != b {
                out.push(format!("{key}: {a} vs {b}"));
            }
        };
        differ(
            "engine",
            self.engine.as_str().into(),
            other.engine.as_str().into(),
        );
        differ("variant", self.variant.clone(), other.variant.clone());
        differ(
            "claim_batch",
            self.claim_batch.to_string(),
            other.claim_batch.to_string(),
        );
        differ(
            "claim_mode",
            self.claim_mode.as_str().into(),
            other.claim_mode.as_str().into(),
        );
        differ(
            "fillfactor",
            format!("{:?}", self.fillfactor),
            format!("{:?}", other.fillfactor),
        );
        differ(
            "unlogged",
            self.unlogged.to_string(),
            other.unlogged.to_string(),
        );
        differ(
            "custom files",
            self.custom_sha256.clone().unwrap_or_default(),
            other.custom_sha256.clone().unwrap_or_default(),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_name_what_differs() {
        let seed = DesignRecord {
            variant: "seed".into(),
            claim_batch: 1,
            ..DesignRecord::default()
        };
        let batch = DesignRecord {
            variant: "batch".into(),
            claim_batch: 10,
            ..seed.clone()
        };
        assert!(seed.differences(&seed).is_empty());
        assert_eq!(
            seed.differences(&batch),
            ["variant: seed vs batch", "claim_batch: 1 vs 10"]
        );
        assert_eq!(batch.label(), "batch ×10 on PostgreSQL");
        assert_eq!(
            batch.phrase(),
            "the batch design (claims of 10) on PostgreSQL"
        );
        let committed = DesignRecord {
            claim_mode: ClaimRule::Committed,
            ..seed
        };
        assert_eq!(
            committed.phrase(),
            "the seed design on PostgreSQL, claims committed"
        );
    }

    #[test]
    fn a_custom_designs_identity_is_its_name_not_its_path_or_hash() {
        let at = |dir: &str, sha: &str| DesignRecord {
            variant: "custom".into(),
            claim_batch: 1,
            custom_dir: Some(dir.into()),
            custom_sha256: Some(sha.into()),
            custom_name: Some("queue".into()),
            ..DesignRecord::default()
        };
        let base = at("/ci/base/queue", "aaaaaaaaaaaaaaaa");
        let cand = at("/ci/cand/queue", "bbbbbbbbbbbbbbbb");
        assert_eq!(base.identity(), "custom:queue on PostgreSQL");
        assert_eq!(base.identity(), cand.identity());
        assert_eq!(
            base.label(),
            "custom on PostgreSQL (/ci/base/queue, sha256 aaaaaaaaaaaa)",
            "the reports still say where and which"
        );
    }
}
