//! The one way results reach the disk: a document and its exporters, one file each, written
//! into a directory that is created when missing; every error names the file.

use super::page::Page;
use anyhow::{Context, Result};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes one file of a document of type `D`.
pub trait Exporter<D: ?Sized> {
    /// File name inside the results directory.
    fn file_name(&self) -> &'static str;
    fn export(&self, doc: &D, out: &mut dyn Write) -> Result<()>;
}

/// A document with Markdown and a page of its own.
pub trait Document {
    fn markdown(&self) -> String;
    fn page(&self) -> Page;
}

/// Writes every exporter's file of `doc` into `dir`, in order; returns the files written.
pub fn write<D: ?Sized>(
    dir: &Path,
    doc: &D,
    exporters: &[&dyn Exporter<D>],
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    for e in exporters {
        let path = dir.join(e.file_name());
        let file =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        let mut out = std::io::BufWriter::new(file);
        e.export(doc, &mut out)
            .with_context(|| format!("writing {}", path.display()))?;
        out.flush()
            .with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// The document as JSON.
pub struct Json(pub &'static str);

impl<D: Serialize> Exporter<D> for Json {
    fn file_name(&self) -> &'static str {
        self.0
    }
    fn export(&self, doc: &D, out: &mut dyn Write) -> Result<()> {
        serde_json::to_writer_pretty(&mut *out, doc)?;
        out.write_all(b"\n")?;
        Ok(())
    }
}

/// The document's Markdown.
pub struct Markdown(pub &'static str);

impl<D: Document> Exporter<D> for Markdown {
    fn file_name(&self) -> &'static str {
        self.0
    }
    fn export(&self, doc: &D, out: &mut dyn Write) -> Result<()> {
        out.write_all(doc.markdown().as_bytes())?;
        Ok(())
    }
}

/// The document's page.
pub struct Html(pub &'static str);

impl<D: Document> Exporter<D> for Html {
    fn file_name(&self) -> &'static str {
        self.0
    }
    fn export(&self, doc: &D, out: &mut dyn Write) -> Result<()> {
        out.write_all(doc.page().render().as_bytes())?;
        Ok(())
    }
}
