//! The documentation kept in step with the code: every relative link in the README and
//! `docs/` resolves (file and heading), and every key of the scenario's JSON Schema is named
//! in the scenario reference.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The pages: the README and every Markdown file under docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![PathBuf::from("README.md")];
    for entry in std::fs::read_dir("docs").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    pages
}

/// GitHub's anchor for a heading: lowercased, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings (outside code blocks).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut found = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            found.insert(slug(line.trim_start_matches('#')));
        }
    }
    found
}

/// The targets of a page's Markdown links `](target)` outside code blocks.
fn links(text: &str) -> Vec<String> {
    let mut in_code = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            found.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    found
}

#[test]
fn every_relative_link_resolves_to_a_file_and_a_heading() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = match file {
                "" => page.clone(),
                f => page.parent().unwrap_or(Path::new("")).join(f),
            };
            let Ok(linked) = std::fs::read_to_string(&file).or_else(|e| {
                if file.is_dir() {
                    Ok(String::new())
                } else {
                    Err(e)
                }
            }) else {
                broken.push(format!("{}: {target} (no such file)", page.display()));
                continue;
            };
            if !anchor.is_empty() && !anchors(&linked).contains(anchor) {
                broken.push(format!("{}: {target} (no such heading)", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Every property name in the schema, at any depth, with the path that reaches it.
fn keys(
    schema: &serde_json::Value,
    root: &serde_json::Value,
    path: &str,
    out: &mut Vec<(String, String)>,
) {
    let resolve = |v: &serde_json::Value| -> serde_json::Value {
        match v.get("$ref").and_then(|r| r.as_str()) {
            Some(r) => {
                let name = r.rsplit('/').next().unwrap_or_default();
                root["$defs"][name].clone()
            }
            None => v.clone(),
        }
    };
    let schema = resolve(schema);
    if let Some(props) = schema.get("properties").and_then(|p| p.as_object()) {
        for (name, sub) in props {
            let here = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            out.push((name.clone(), here.clone()));
            keys(sub, root, &here, out);
        }
    }
    for nested in ["items", "additionalProperties"] {
        if let Some(sub) = schema.get(nested).filter(|s| s.is_object()) {
            keys(sub, root, path, out);
        }
    }
    for alternatives in ["anyOf", "oneOf", "allOf"] {
        for sub in schema
            .get(alternatives)
            .and_then(|a| a.as_array())
            .into_iter()
            .flatten()
        {
            keys(sub, root, path, out);
        }
    }
}

#[test]
fn every_scenario_key_is_in_the_reference() {
    let schema =
        serde_json::to_value(schemars::schema_for!(dbq_bench::scenario::Scenario)).unwrap();
    let mut all = Vec::new();
    keys(&schema, &schema, "", &mut all);
    assert!(
        all.len() > 50,
        "the schema walk found only {} keys",
        all.len()
    );
    let reference = std::fs::read_to_string("docs/reference.md").unwrap();
    // A key is documented as `key = …` in the example, as a `[section]`, or as `key` in prose.
    let documented = |path: &str, name: &str| {
        [
            format!("{name} ="),
            format!("`{name}`"),
            format!("[{path}]"),
            format!("[[{path}]]"),
        ]
        .iter()
        .any(|form| reference.contains(form.as_str()))
    };
    let missing: BTreeSet<String> = all
        .into_iter()
        .filter(|(name, path)| !documented(path, name))
        .map(|(_, path)| path)
        .collect();
    assert!(
        missing.is_empty(),
        "scenario keys not in docs/reference.md:\n{}",
        missing.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The scenario reference lists every registered engine, in registry order, where it shows
/// `database.engine`.
#[test]
fn the_reference_names_every_engine() {
    let text = std::fs::read_to_string("docs/reference.md").unwrap();
    let names: Vec<&str> = dbq_bench::backend::Engine::ALL
        .iter()
        .map(|e| e.as_str())
        .collect();
    let listed = format!("# {}", names.join(" | "));
    assert!(
        text.lines()
            .any(|l| l.starts_with("engine = ") && l.contains(&listed)),
        "docs/reference.md's `engine = ` line should list {listed}"
    );
}
