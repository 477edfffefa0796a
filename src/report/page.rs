//! The one HTML shell every document uses (a run's report, a matrix's comparison, a
//! capacity search, a calibration): the same styles, header, verdict boxes and navigation;
//! each document supplies its sections. Self-contained: inline CSS and SVG, no scripts, no
//! links out.

use super::svg::escape;
use std::fmt::Write;

const STYLE: &str = "body{font-family:sans-serif;margin:24px auto;max-width:1000px;color:#222;line-height:1.4;padding:0 12px}\
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:3px}\
.sub{color:#666;font-size:13px}.box{padding:10px 14px;border-radius:4px;margin:10px 0}\
.ok{background:#e8f5e9;border-left:5px solid #2e7d32}.bad{background:#fdecea;border-left:5px solid #c62828}\
.warn{background:#fff8e1;border-left:5px solid #f9a825}.plain{background:#f5f5f5;border-left:5px solid #999}\
nav{font-size:13px;margin:10px 0 0}nav a{margin-right:12px;color:#1565c0;text-decoration:none}\
.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:13px;margin:8px 0}\
td,th{border:1px solid #ddd;padding:3px 8px;text-align:right;vertical-align:top}th{background:#f5f5f5}td.l,th.l{text-align:left}\
.pass{color:#2e7d32;font-weight:bold}.fail{color:#c62828;font-weight:bold}code{background:#f5f5f5;padding:1px 3px}\
p.note,ul.note{font-size:13px;color:#444}svg{display:block;margin:6px 0;max-width:100%;height:auto}";

/// How a box reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Ok,
    Warn,
    Bad,
    Plain,
}

impl Tone {
    fn class(self) -> &'static str {
        match self {
            Tone::Ok => "ok",
            Tone::Warn => "warn",
            Tone::Bad => "bad",
            Tone::Plain => "plain",
        }
    }

    /// Ok when `good`, else bad.
    pub fn of(good: bool) -> Tone {
        if good { Tone::Ok } else { Tone::Bad }
    }
}

/// A box under the header: the verdict, the proof, a warning.
#[derive(Debug, Clone)]
pub struct Callout {
    pub tone: Tone,
    /// Its first word or two, in bold (`Verdict.`).
    pub label: String,
    /// Plain text (escaped when rendered).
    pub text: String,
}

/// A titled part of the page, in the navigation; `body` is HTML.
#[derive(Debug, Clone)]
pub struct Section {
    pub title: String,
    pub body: String,
}

impl Section {
    pub fn new(title: impl Into<String>, body: impl Into<String>) -> Section {
        Section {
            title: title.into(),
            body: body.into(),
        }
    }
}

/// A whole document.
#[derive(Debug, Clone, Default)]
pub struct Page {
    pub title: String,
    /// One line under the title (plain text).
    pub subtitle: String,
    /// A paragraph under it (plain text), e.g. the scenario's description.
    pub intro: Option<String>,
    pub callouts: Vec<Callout>,
    pub sections: Vec<Section>,
}

impl Page {
    pub fn render(&self) -> String {
        let mut h = String::new();
        let title = escape(&self.title);
        let _ = write!(
            h,
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
             <style>{STYLE}</style></head><body><h1>{title}</h1><p class=\"sub\">{}</p>",
            escape(&self.subtitle)
        );
        if let Some(intro) = &self.intro {
            let _ = write!(h, "<p>{}</p>", escape(intro));
        }
        for c in &self.callouts {
            let _ = write!(
                h,
                "<div class=\"box {}\"><b>{}</b> {}</div>",
                c.tone.class(),
                escape(&c.label),
                escape(&c.text)
            );
        }
        if self.sections.len() > 1 {
            h.push_str("<nav>");
            for (i, s) in self.sections.iter().enumerate() {
                let _ = write!(h, "<a href=\"#s{i}\">{}</a>", escape(&s.title));
            }
            h.push_str("</nav>");
        }
        for (i, s) in self.sections.iter().enumerate() {
            let _ = write!(h, "<h2 id=\"s{i}\">{}</h2>{}", escape(&s.title), s.body);
        }
        h.push_str("</body></html>\n");
        h
    }
}

/// A table of plain-text cells (escaped), figures right-aligned and words left-aligned, in
/// a box that scrolls sideways rather than running off the page.
pub fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let figure = |text: &str| {
        text.chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || "-–.".contains(c))
    };
    let cell = |tag: &str, left: bool, text: &str| {
        let class = if left { " class=\"l\"" } else { "" };
        format!("<{tag}{class}>{}</{tag}>", escape(text))
    };
    // A heading sits over its column as the column's first cell does.
    let words = |i: usize| {
        i == 0
            || rows
                .first()
                .and_then(|r| r.get(i))
                .is_some_and(|c| !figure(c))
    };
    let mut h = String::from("<div class=\"scroll\"><table><tr>");
    for (i, c) in header.iter().enumerate() {
        h.push_str(&cell("th", words(i), c));
    }
    h.push_str("</tr>");
    for row in rows {
        h.push_str("<tr>");
        for (i, c) in row.iter().enumerate() {
            h.push_str(&cell("td", i == 0 || !figure(c), c));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table></div>");
    h
}

/// A Markdown table of the same cells.
pub fn markdown_table(header: &[String], rows: &[Vec<String>]) -> String {
    let line = |cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    let mut md = line(header);
    md.push_str(&format!("|{}\n", "---|".repeat(header.len())));
    for row in rows {
        md.push_str(&line(row));
    }
    md
}

/// Notes as a list (plain text).
pub fn notes(items: &[String]) -> String {
    let mut h = String::from("<ul class=\"note\">");
    for n in items {
        let _ = write!(h, "<li>{}</li>", escape(n));
    }
    h.push_str("</ul>");
    h
}

/// A note under a table or chart (plain text).
pub fn note(text: &str) -> String {
    format!("<p class=\"note\">{}</p>", escape(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_escape_text_and_link_only_to_themselves() {
        let page = Page {
            title: "a <b>".into(),
            subtitle: "s & t".into(),
            intro: None,
            callouts: vec![Callout {
                tone: Tone::Bad,
                label: "Verdict.".into(),
                text: "<script>".into(),
            }],
            sections: vec![
                Section::new("One", table(&["x".into()], &[vec!["<1>".into()]])),
                Section::new("Two", note("n")),
            ],
        };
        let h = page.render();
        assert!(h.contains("<h1>a &lt;b&gt;</h1>") && h.contains("&lt;script&gt;"));
        assert!(h.contains("<a href=\"#s1\">Two</a>") && h.contains("<h2 id=\"s1\">Two</h2>"));
        assert!(!h.contains("http") && !h.contains("<script"));
        assert_eq!(
            markdown_table(&["a".into(), "b".into()], &[vec!["1|2".into(), "3".into()]]),
            "| a | b |\n|---|---|\n| 1\\|2 | 3 |\n"
        );
    }
}
