//! Reading a scenario file: TOML syntax, `--set` overrides, then typed deserialization. Every
//! failure becomes one `InputError` naming the file (or flag), the key and the reason.

use super::model::{ProviderKind, Scenario};
use crate::error::InputError;
use std::path::Path;

/// Changes the command line makes to a scenario before it is validated.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `key.path=value` assignments (`--set`), applied in order. A `queue.dir` given here is
    /// relative to the current directory.
    pub sets: Vec<String>,
    /// `--db`: beats `database.provider`.
    pub provider: Option<ProviderKind>,
    /// `--image`: beats `database.image`.
    pub image: Option<String>,
    /// `--database-url`: beats `database.url`.
    pub database_url: Option<String>,
}

/// A `key.path=value` assignment: a `--set` flag, or a matrix cell's option. Array elements
/// are addressed by index (`phases.1.rate` or `phases[1].rate`).
#[derive(Debug, Clone, PartialEq)]
pub struct Assignment {
    pub key: String,
    pub value: toml::Value,
}

impl Assignment {
    /// From `--set` text: the value is read as TOML (`16`, `0.5`, `true`, `"text"`); anything
    /// that is not valid TOML is taken as a string (`10s`, `max`).
    pub fn parse(text: &str) -> Result<Assignment, InputError> {
        let (key, raw) = text
            .split_once('=')
            .ok_or_else(|| InputError::whole(set_source(text), "expected key.path=value"))?;
        Ok(Assignment {
            key: key.trim().to_string(),
            value: parse_value(raw.trim()),
        })
    }
}

/// A `--set` flag as errors name it: a URL's password masked (`database.url=` may hold one).
fn set_source(set: &str) -> String {
    format!("--set {}", crate::redact::redact_url(set))
}

/// A scenario file read once, before any override: a matrix makes every cell's plan from it.
#[derive(Debug, Clone)]
pub struct ScenarioFile {
    source: String,
    table: toml::Table,
}

impl ScenarioFile {
    pub fn read(path: &Path) -> Result<ScenarioFile, InputError> {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::whole(&source, format!("cannot read the scenario: {e}")))?;
        ScenarioFile::parse(&source, &text)
    }

    /// From text already in memory; `source` names it in errors.
    pub fn parse(source: &str, text: &str) -> Result<ScenarioFile, InputError> {
        let table = toml::from_str(text).map_err(|e| syntax_error(source, text, &e))?;
        Ok(ScenarioFile {
            source: source.to_string(),
            table,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// The scenario with the flags' overrides and then `extra` assignments applied (an
    /// error in one of those names `extra_source`), deserialized. It still has optional
    /// fields; `Plan::build` validates and resolves it.
    pub fn scenario(
        &self,
        overrides: &Overrides,
        extra: &[Assignment],
        extra_source: &str,
    ) -> Result<Scenario, InputError> {
        let mut table = self.table.clone();
        for set in &overrides.sets {
            let a = Assignment::parse(set)?;
            assign(&mut table, &a).map_err(|e| assignment_error(&set_source(set), e))?;
        }
        for a in extra {
            assign(&mut table, a).map_err(|e| assignment_error(extra_source, e))?;
        }
        let mut scenario: Scenario = serde_path_to_error::deserialize(toml::Value::Table(table))
            .map_err(|e| {
                let (key, reason) = describe(e.path().to_string(), e.inner().message());
                // A key a --set wrote is that flag's fault, not the file's.
                blame_the_flag(InputError::new(&self.source, key, reason), overrides)
            })?;
        let dir_key = |key: &str| key == "queue.dir";
        let dir_from_flag = overrides
            .sets
            .iter()
            .filter_map(|s| Assignment::parse(s).ok())
            .any(|a| dir_key(&a.key))
            && !extra.iter().any(|a| dir_key(&a.key));
        if dir_from_flag {
            // A directory typed on the command line is relative to where the user is, not
            // to the scenario file's folder.
            scenario.queue.dir = scenario
                .queue
                .dir
                .take()
                .map(|d| std::path::absolute(&d).unwrap_or(d));
        }
        if let Some(p) = overrides.provider {
            scenario.database.provider = p;
        }
        if let Some(image) = &overrides.image {
            scenario.database.image = Some(image.clone());
        }
        if let Some(url) = &overrides.database_url {
            scenario.database.url = Some(url.clone());
        }
        Ok(scenario)
    }
}

/// Reads and deserializes a scenario file with overrides applied. The result still has
/// optional fields; `Plan::build` validates and resolves it.
pub fn load(path: &Path, overrides: &Overrides) -> Result<Scenario, InputError> {
    ScenarioFile::read(path)?.scenario(overrides, &[], "")
}

/// Like [`load`] for text already in memory; `source` names it in errors.
pub fn parse(source: &str, text: &str, overrides: &Overrides) -> Result<Scenario, InputError> {
    ScenarioFile::parse(source, text)?.scenario(overrides, &[], "")
}

fn syntax_error(source: &str, text: &str, e: &toml::de::Error) -> InputError {
    let reason = first_line(e.message());
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            InputError::new(
                source,
                format!("line {line}, column {column}"),
                format!("invalid TOML: {reason}"),
            )
        }
        None => InputError::whole(source, format!("invalid TOML: {reason}")),
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").trim().to_string()
}

/// Turns serde's (path, message) into (key, reason). "missing field `x`" at `a.b` becomes
/// key `a.b.x`; toml's trailing "in `…`" context line is dropped.
fn describe(path: String, message: &str) -> (String, String) {
    let message = first_line(message);
    let path = if path == "." { String::new() } else { path };
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        let key = if path.is_empty() {
            field.to_string()
        } else {
            format!("{path}.{field}")
        };
        return (key, "required key is missing".to_string());
    }
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let (field, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let expected = expected.trim_start_matches(',').trim();
        // serde_path_to_error usually ends the path with the unknown field already (not
        // inside internally tagged tables such as a phase's faults).
        let key = if path.is_empty() {
            field.to_string()
        } else if path.ends_with(field) {
            path
        } else {
            format!("{path}.{field}")
        };
        let hint = if expected.is_empty() {
            String::new()
        } else {
            format!(" ({expected})")
        };
        return (key, format!("unknown key{hint}"));
    }
    let key = if path.is_empty() {
        "(top level)".to_string()
    } else {
        path
    };
    // serde's words for an enum written as a table with several keys.
    if message.starts_with("wanted exactly 1 element") {
        return (
            key,
            "name exactly one kind, e.g. { fixed = \"5ms\" } (to replace the whole value with --set, \
             give it as TOML: --set 'KEY={ fixed = \"5ms\" }')"
                .to_string(),
        );
    }
    (key.clone(), bounded_words(&key, &plain_words(&message)))
}

/// Keys whose bounds the plan checks (`check_count`) but whose type is a plain `u32`: a
/// type error names their bounds, not u32's.
const COUNT_KEYS: [&str; 3] = ["producers.count", "consumers.count", "producers.max_count"];

fn bounded_words(key: &str, words: &str) -> String {
    if COUNT_KEYS.contains(&key) {
        words.replace("from 0 to 4294967295", "from 1 to 1000")
    } else {
        words.to_string()
    }
}

/// An error about a key that a `--set` wrote (or about a section it made) is that flag's
/// fault, not the file's: its source becomes `--set KEY=VALUE` (the last such flag, as the
/// last one wins), or `--database-url` / `--image` for the keys those set.
pub fn blame_the_flag(mut e: InputError, overrides: &Overrides) -> InputError {
    let dotted = |k: &str| k.trim().replace('[', ".").replace(']', "");
    let Some(at) = e.key.as_deref().map(dotted) else {
        return e;
    };
    let from_flag = overrides.sets.iter().rev().find(|set| {
        set.split_once('=').is_some_and(|(k, _)| {
            let k = dotted(k);
            at == k || at.starts_with(&format!("{k}.")) || k.starts_with(&format!("{at}."))
        })
    });
    if let Some(set) = from_flag {
        e.source = set_source(set);
    }
    // The flags that set a key of their own (named alone: a URL may hold a password).
    match at.as_str() {
        "database.url" if overrides.database_url.is_some() => e.source = "--database-url".into(),
        "database.image" if overrides.image.is_some() => e.source = "--image".into(),
        _ => {}
    }
    e
}

/// serde's Rust-flavoured expectations in the words of the scenario reference.
fn plain_words(message: &str) -> String {
    const WORDS: [(&str, &str); 14] = [
        ("expected u8", "expected a whole number from 0 to 255"),
        ("expected u16", "expected a whole number from 0 to 65535"),
        (
            "expected u32",
            "expected a whole number from 0 to 4294967295",
        ),
        ("expected u64", "expected a whole number from 0 up"),
        ("expected usize", "expected a whole number from 0 up"),
        (
            "expected i32",
            "expected a whole number from -2147483648 to 2147483647",
        ),
        ("expected i64", "expected a whole number"),
        ("expected f32", "expected a number"),
        ("expected f64", "expected a number"),
        ("expected a sequence", "expected a list, e.g. [ … ]"),
        ("expected a boolean", "expected true or false"),
        ("expected a map", "expected a table, e.g. { key = value }"),
        ("expected a string", "expected a string in quotes"),
        (
            "expected struct ",
            "expected a table, e.g. { key = value }: ",
        ),
    ];
    let mut out = message.to_string();
    for (rust, plain) in WORDS {
        if let Some(at) = out.find(rust) {
            let end = at + rust.len();
            // `expected struct PhaseSection` names a Rust type: drop the name.
            let rest = if rust.ends_with(' ') {
                out[end..]
                    .trim_start_matches(|c: char| c.is_alphanumeric())
                    .to_string()
            } else {
                out[end..].to_string()
            };
            let plain = plain.trim_end_matches(": ");
            out = format!("{}{plain}{rest}", &out[..at]);
        }
    }
    out.replace("integer `", "`").replace("string \"", "\"")
}

fn assignment_error(source: &str, (key, reason): (String, String)) -> InputError {
    if key.is_empty() {
        InputError::whole(source, reason)
    } else {
        InputError::new(source, key, reason)
    }
}

/// Applies one assignment; an error is (key, reason).
fn assign(table: &mut toml::Table, a: &Assignment) -> Result<(), (String, String)> {
    let key = a.key.replace('[', ".").replace(']', "");
    let segments: Vec<&str> = key.split('.').filter(|s| !s.is_empty()).collect();
    let Some((last, parents)) = segments.split_last() else {
        return Err((String::new(), "the key is empty".into()));
    };
    let mut node = table;
    let mut walked = String::new();
    for (i, seg) in parents.iter().enumerate() {
        walked = if walked.is_empty() {
            seg.to_string()
        } else {
            format!("{walked}.{seg}")
        };
        let entry = node
            .entry(seg.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        node = match entry {
            toml::Value::Table(t) => t,
            toml::Value::Array(items) => {
                // The next segment must index into the array.
                return set_in_array(items, &segments[i + 1..], a.value.clone(), &walked);
            }
            _ => {
                return Err((walked, "is not a table, cannot set a key inside it".into()));
            }
        };
    }
    node.insert(last.to_string(), a.value.clone());
    Ok(())
}

fn set_in_array(
    items: &mut [toml::Value],
    rest: &[&str],
    value: toml::Value,
    walked: &str,
) -> Result<(), (String, String)> {
    let (index, rest) = rest.split_first().ok_or_else(|| {
        (
            walked.to_string(),
            "is an array; give an index, e.g. phases.0.rate".to_string(),
        )
    })?;
    let i: usize = index.parse().map_err(|_| {
        (
            walked.to_string(),
            format!("is an array; \"{index}\" is not an index"),
        )
    })?;
    let len = items.len();
    let item = items.get_mut(i).ok_or_else(|| {
        (
            format!("{walked}[{i}]"),
            format!("no such element (the array has {len})"),
        )
    })?;
    match rest.split_last() {
        None => *item = value,
        Some((last, parents)) => {
            let mut node = item
                .as_table_mut()
                .ok_or_else(|| (format!("{walked}[{i}]"), "is not a table".to_string()))?;
            for seg in parents {
                node = node
                    .entry(seg.to_string())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                    .as_table_mut()
                    .ok_or_else(|| (seg.to_string(), "is not a table".to_string()))?;
            }
            node.insert(last.to_string(), value);
        }
    }
    Ok(())
}

fn parse_value(raw: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse("s.toml", text, &Overrides::default())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn errors_name_file_key_and_reason_on_one_line() {
        let cases = [
            (
                "[producers]\nrat = 3\n",
                "s.toml: producers.rat: unknown key",
            ),
            (
                "[producers]\ncount = \"x\"\n",
                "s.toml: producers.count: invalid type",
            ),
            (
                "[[phases]]\nname = \"a\"\n",
                "s.toml: phases[0].duration: required key is missing",
            ),
            (
                "[[phases]]\nname = \"a\"\nduration = \"1s\"\nrate = \"fast\"\n",
                "s.toml: phases[0].rate: rate must be",
            ),
            (
                "[consumers.handler]\nduration = { fixd = \"1ms\" }\n",
                "s.toml: consumers.handler.duration: unknown variant",
            ),
            ("colour = 1\n", "s.toml: colour: unknown key"),
            (
                "[consumers.handler]\nduration = { fixed = \"1ms\", uniform = { min = \"1ms\", max = \"2ms\" } }\n",
                "s.toml: consumers.handler.duration: name exactly one kind",
            ),
            ("[producers\n", "s.toml: line 1, column"),
        ];
        for (text, want) in cases {
            let got = err(text);
            assert!(
                got.starts_with(want),
                "for {text:?}: got {got:?}, want prefix {want:?}"
            );
            assert!(!got.contains('\n'), "multi-line error: {got:?}");
        }
    }

    #[test]
    fn set_overrides_keys_arrays_and_missing_tables() {
        let text = "[[phases]]\nname = \"a\"\nduration = \"1s\"\n[[phases]]\nname = \"b\"\nduration = \"1s\"\n";
        let o = Overrides {
            sets: vec![
                "phases.1.rate=max".into(),
                "phases[0].rate=250".into(),
                "consumers.handler.error_rate=0.25".into(),
                "producers.count=7".into(),
            ],
            ..Default::default()
        };
        let s = parse("s.toml", text, &o).unwrap();
        assert_eq!(s.phases[1].rate, Some(crate::scenario::Rate::Max));
        assert_eq!(
            s.phases[0].rate,
            Some(crate::scenario::Rate::PerSecond(250.0))
        );
        assert_eq!(s.consumers.handler.error_rate, 0.25);
        assert_eq!(s.producers.count, 7);
    }

    /// `queue.dir` in the file is the file's (resolved later, against its folder); given
    /// with `--set` it is the current directory's.
    #[test]
    fn a_directory_set_on_the_command_line_is_relative_to_the_current_directory() {
        let text = "[queue]\nvariant = \"custom\"\ndir = \"designs/mine\"\n";
        let from_file = parse("sub/s.toml", text, &Overrides::default()).unwrap();
        assert_eq!(from_file.queue.dir.unwrap(), Path::new("designs/mine"));
        let o = Overrides {
            sets: vec!["queue.dir=designs/other".into()],
            ..Default::default()
        };
        let from_flag = parse("sub/s.toml", text, &o).unwrap();
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(from_flag.queue.dir.unwrap(), cwd.join("designs/other"));
    }

    #[test]
    fn bad_sets_name_the_flag() {
        let text = "[[phases]]\nname = \"a\"\nduration = \"1s\"\n";
        for (set, want) in [
            (
                "phases.3.rate=1",
                "--set phases.3.rate=1: phases[3]: no such element",
            ),
            ("producers", "--set producers: expected key.path=value"),
            (
                "producers.rat=1",
                "--set producers.rat=1: producers.rat: unknown key",
            ),
            (
                "producers.count=-1",
                "--set producers.count=-1: producers.count: invalid value: `-1`, expected a whole number from 1 to 1000",
            ),
            (
                "queue.partitions=\"x\"",
                "--set queue.partitions=\"x\": queue.partitions: invalid type: \"x\", expected a whole number from 1 to 1000",
            ),
            (
                "queue.partitions=0",
                "--set queue.partitions=0: queue.partitions: must be between 1 and 1000, got 0",
            ),
            (
                "phases=[5]",
                "--set phases=[5]: phases[0]: invalid type: `5`, expected a table, e.g. { key = value }",
            ),
        ] {
            let o = Overrides {
                sets: vec![set.into()],
                ..Default::default()
            };
            let got = parse("s.toml", text, &o).unwrap_err().to_string();
            assert!(got.starts_with(want), "{set}: got {got:?}");
        }
    }
}
