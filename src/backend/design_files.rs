//! A custom design's files as a record: the design's name (design.toml's `name`, else its
//! directory's), the SHA-256 of each file and of them all. What tells two versions of one
//! design apart, and names what a pull request changed in it (`compare`, `gate`), without
//! a path or a hash ever becoming part of the design's name.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The files of a custom design's directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesignFiles {
    /// The name the team gave it: design.toml's `name`, else the directory's own name.
    pub name: String,
    /// SHA-256 over every file (its path from the directory, then its bytes), in path order.
    pub sha256: String,
    /// Each file's SHA-256, by its path from the directory (`/` between folders).
    pub files: BTreeMap<String, String>,
}

impl DesignFiles {
    /// Reads `dir` whole; hidden entries and Python's `__pycache__` are not the design's.
    pub fn read(dir: &Path) -> std::io::Result<DesignFiles> {
        use sha2::Digest;
        let mut all = sha2::Sha256::new();
        let mut files = BTreeMap::new();
        for path in files_under(dir)? {
            let relative = path.strip_prefix(dir).unwrap_or(&path);
            let bytes = std::fs::read(&path)?;
            all.update(relative.to_string_lossy().as_bytes());
            all.update(&bytes);
            let key = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            files.insert(key, hex(&sha2::Sha256::digest(&bytes)));
        }
        Ok(DesignFiles {
            name: name_of(dir),
            sha256: hex(&all.finalize()),
            files,
        })
    }

    /// The files that differ from `other`'s: changed, added (`+name`) or removed (`-name`).
    pub fn changed_from(&self, other: &DesignFiles) -> Vec<String> {
        let mut out = Vec::new();
        for (file, sha) in &self.files {
            match other.files.get(file) {
                Some(o) if o == sha => {}
                Some(_) => out.push(file.clone()),
                None => out.push(format!("+{file}")),
            }
        }
        for file in other.files.keys() {
            if !self.files.contains_key(file) {
                out.push(format!("-{file}"));
            }
        }
        out
    }
}

/// Every file under `dir`, in path order.
fn files_under(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name == "__pycache__" {
                continue;
            }
            if entry.file_type()?.is_dir() {
                dirs.push(entry.path());
            } else {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    Ok(files)
}

/// design.toml's top-level `name`, when it gives one; else the directory's last component.
fn name_of(dir: &Path) -> String {
    let declared = std::fs::read_to_string(dir.join("design.toml"))
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .and_then(|t| t.get("name").and_then(|v| v.as_str()).map(str::to_string));
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    declared.unwrap_or_else(|| {
        canonical
            .file_name()
            .map_or_else(|| "custom".into(), |n| n.to_string_lossy().to_string())
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, file: &str, text: &str) {
        std::fs::create_dir_all(dir.join(file).parent().unwrap()).unwrap();
        std::fs::write(dir.join(file), text).unwrap();
    }

    #[test]
    fn the_record_names_the_design_and_each_file_and_ignores_hidden_ones() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("queue");
        write(&dir, "claim.sql", "SELECT 1");
        write(&dir, "sub/x.sql", "SELECT 2");
        write(&dir, ".hidden", "ignored");
        write(&dir, "__pycache__/a.pyc", "ignored");
        let a = DesignFiles::read(&dir).unwrap();
        assert_eq!(a.name, "queue");
        assert_eq!(
            a.files.keys().collect::<Vec<_>>(),
            ["claim.sql", "sub/x.sql"]
        );
        assert_eq!(a.sha256.len(), 64);

        write(&dir, "claim.sql", "SELECT 1 -- a comment");
        write(&dir, "new.sql", "SELECT 3");
        std::fs::remove_file(dir.join("sub/x.sql")).unwrap();
        write(&dir, "design.toml", "name = \"acme-jobs\"\n");
        let b = DesignFiles::read(&dir).unwrap();
        assert_eq!(b.name, "acme-jobs", "design.toml's name wins");
        assert_ne!(a.sha256, b.sha256);
        assert_eq!(
            b.changed_from(&a),
            ["claim.sql", "+design.toml", "+new.sql", "-sub/x.sql"]
        );
        assert!(b.changed_from(&b).is_empty());
    }
}
