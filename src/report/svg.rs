//! Small, self-contained SVG charts for report.html: time series with phase bands and fault
//! markers, a latency percentile spectrum on a log scale, and horizontal bars. Plain SVG
//! elements only: no scripts, fonts or links, so the report opens anywhere.

use std::fmt::Write;

const W: f64 = 900.0;
const H: f64 = 270.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 42.0;

pub const PALETTE: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

/// A named line.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A phase drawn behind the data: [from, to) on the x axis.
pub struct Band {
    pub from: f64,
    pub to: f64,
    pub label: String,
}

/// A fault drawn as a vertical line.
pub struct Marker {
    pub at: f64,
    pub label: String,
}

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Round tick positions covering [lo, hi]: steps of 1, 2 or 5 × 10^k.
fn ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![lo];
    }
    let raw = (hi - lo) / target as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 {
        out.push(t);
        t += step;
    }
    out
}

fn label(v: f64) -> String {
    let v = if v == 0.0 { 0.0 } else { v };
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn open(svg: &mut String, title: &str) {
    let _ = write!(
        svg,
        r#"<svg viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="{t}" font-family="sans-serif" font-size="11"><text x="{LEFT}" y="18" font-size="13" font-weight="bold">{t}</text>"#,
        t = escape(title)
    );
}

fn legend(svg: &mut String, names: &[&str]) {
    let mut x = W - RIGHT;
    for (i, name) in names.iter().enumerate().rev() {
        let width = 7.0 * name.chars().count() as f64 + 22.0;
        x -= width;
        let _ = write!(
            svg,
            r#"<rect x="{x}" y="10" width="12" height="4" fill="{c}"/><text x="{}" y="16">{}</text>"#,
            x + 16.0,
            escape(name),
            c = PALETTE[i % PALETTE.len()]
        );
    }
}

/// Draws series `i` through the given "x,y" points, in its palette colour.
fn polyline(svg: &mut String, i: usize, points: &[String]) {
    let _ = write!(
        svg,
        r#"<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"/>"#,
        PALETTE[i % PALETTE.len()],
        points.join(" ")
    );
}

/// Frames the plot area, adds the legend and closes the element.
fn finish(mut svg: String, series: &[Series]) -> String {
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let _ = write!(
        svg,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>"##
    );
    legend(
        &mut svg,
        &series.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
    );
    svg.push_str("</svg>");
    svg
}

/// A time chart: x in seconds since the load started, y linear from 0.
pub struct TimeChart<'a> {
    pub title: &'a str,
    /// What the x axis measures (time charts: seconds since the load started).
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub series: Vec<Series>,
    pub bands: &'a [Band],
    pub markers: &'a [Marker],
    /// The x range shared by the report's time charts (points outside are left out).
    pub x_range: (f64, f64),
}

/// Where a time chart's values land: the ranges shown and the plot's size.
struct Frame {
    x0: f64,
    x1: f64,
    y1: f64,
    pw: f64,
    ph: f64,
}

impl Frame {
    fn sx(&self, x: f64) -> f64 {
        LEFT + (x - self.x0) / (self.x1 - self.x0).max(1e-9) * self.pw
    }

    fn sy(&self, y: f64) -> f64 {
        TOP + self.ph - y / self.y1 * self.ph
    }

    fn inside(&self, p: &(f64, f64)) -> bool {
        p.0 >= self.x0 && p.0 <= self.x1
    }
}

impl TimeChart<'_> {
    pub fn render(&self) -> String {
        let (x0, x1) = if self.x_range.1 > self.x_range.0 {
            self.x_range
        } else {
            (0.0, 1.0)
        };
        let mut f = Frame {
            x0,
            x1,
            y1: 1.0,
            pw: W - LEFT - RIGHT,
            ph: H - TOP - BOTTOM,
        };
        f.y1 = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().filter(|p| f.inside(p)).map(|p| p.1))
            .fold(0.0f64, f64::max)
            .max(1e-9)
            * 1.08;
        let mut svg = String::new();
        open(&mut svg, self.title);
        self.bands(&mut svg, &f);
        self.axes(&mut svg, &f);
        for (i, s) in self.series.iter().enumerate() {
            let pts: Vec<String> = s
                .points
                .iter()
                .filter(|p| f.inside(p))
                .map(|(x, y)| format!("{:.1},{:.1}", f.sx(*x), f.sy(*y)))
                .collect();
            polyline(&mut svg, i, &pts);
        }
        for m in self.markers {
            let x = f.sx(m.at);
            let _ = write!(
                svg,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{}" stroke="#c00" stroke-dasharray="4 3"/><text x="{:.1}" y="{}" fill="#c00" font-size="10">{}</text>"##,
                TOP + f.ph,
                x + 2.0,
                TOP + f.ph - 4.0,
                escape(&m.label)
            );
        }
        finish(svg, &self.series)
    }

    /// The phases behind the plot, labelled where the label fits.
    fn bands(&self, svg: &mut String, f: &Frame) {
        for (i, b) in self.bands.iter().enumerate() {
            let (a, z) = (f.sx(b.from.max(f.x0)), f.sx(b.to.min(f.x1)));
            let fill = if i % 2 == 0 { "#f2f2f2" } else { "#e6ecf5" };
            let _ = write!(
                svg,
                r#"<rect x="{a:.1}" y="{TOP}" width="{:.1}" height="{}" fill="{fill}"/>"#,
                (z - a).max(0.0),
                f.ph
            );
            if z - a > 6.5 * b.label.chars().count() as f64 + 6.0 {
                let _ = write!(
                    svg,
                    r##"<text x="{:.1}" y="{}" fill="#666">{}</text>"##,
                    a + 3.0,
                    TOP + 11.0,
                    escape(&b.label)
                );
            }
        }
    }

    /// Grid lines, tick labels and the axes' names.
    fn axes(&self, svg: &mut String, f: &Frame) {
        for t in ticks(0.0, f.y1, 5) {
            let y = f.sy(t);
            let _ = write!(
                svg,
                r##"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                W - RIGHT,
                LEFT - 5.0,
                y + 4.0,
                label(t)
            );
        }
        for t in ticks(f.x0, f.x1, 10) {
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
                f.sx(t),
                H - BOTTOM + 15.0,
                label(t)
            );
        }
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text><text transform="translate(14 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
            LEFT + f.pw / 2.0,
            H - 6.0,
            escape(self.x_label),
            TOP + f.ph / 2.0,
            escape(self.y_label)
        );
    }
}

/// Latency by percentile: x is the percentile on a "nines" scale (-log10(1 - p)), y the
/// latency in ms on a log scale.
pub struct SpectrumChart<'a> {
    pub title: &'a str,
    /// Points are (percentile 0–100, latency ms).
    pub series: Vec<Series>,
}

impl SpectrumChart<'_> {
    pub fn render(&self) -> String {
        let nines = |p: f64| -(1.0 - (p / 100.0).min(0.999_99)).log10();
        let (x1, pw, ph) = (5.0, W - LEFT - RIGHT, H - TOP - BOTTOM);
        let vals = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .filter(|v| *v > 0.0);
        let (lo, hi) = vals.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
        let (e0, e1) = if lo > hi {
            (-1.0, 1.0)
        } else {
            (
                lo.log10().floor(),
                hi.log10().ceil().max(lo.log10().floor() + 1.0),
            )
        };
        let sx = |p: f64| LEFT + nines(p) / x1 * pw;
        let sy = |v: f64| TOP + ph - (v.max(10f64.powf(e0)).log10() - e0) / (e1 - e0) * ph;
        let mut svg = String::new();
        open(&mut svg, self.title);
        let mut e = e0;
        while e <= e1 {
            let y = sy(10f64.powf(e));
            let _ = write!(
                svg,
                r##"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{} ms</text>"##,
                W - RIGHT,
                LEFT - 5.0,
                y + 4.0,
                label(10f64.powf(e))
            );
            e += 1.0;
        }
        for (p, name) in [
            (0.0, "0"),
            (90.0, "90"),
            (99.0, "99"),
            (99.9, "99.9"),
            (99.99, "99.99"),
            (99.999, "99.999"),
        ] {
            let x = sx(p);
            let _ = write!(
                svg,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{}" stroke="#eee"/><text x="{x:.1}" y="{}" text-anchor="middle">{name}</text>"##,
                TOP + ph,
                H - BOTTOM + 15.0
            );
        }
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle">percentile</text>"#,
            LEFT + pw / 2.0,
            H - 6.0
        );
        for (i, s) in self.series.iter().enumerate() {
            let pts: Vec<String> = s
                .points
                .iter()
                .filter(|p| p.1 > 0.0)
                .map(|(p, v)| format!("{:.1},{:.1}", sx(*p), sy(*v)))
                .collect();
            polyline(&mut svg, i, &pts);
        }
        finish(svg, &self.series)
    }
}

/// Horizontal bars, largest first.
pub fn bars(title: &str, items: &[(String, f64)]) -> String {
    let n = items.len().max(1) as f64;
    let height = TOP + n * 20.0 + 12.0;
    let max = items.iter().map(|i| i.1).fold(0.0f64, f64::max).max(1e-9);
    let (name_w, bar_w) = (260.0, W - 260.0 - 90.0);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg viewBox="0 0 {W} {height}" width="{W}" height="{height}" role="img" aria-label="{t}" font-family="sans-serif" font-size="11"><text x="10" y="18" font-size="13" font-weight="bold">{t}</text>"#,
        t = escape(title)
    );
    for (i, (name, v)) in items.iter().enumerate() {
        let y = TOP + i as f64 * 20.0;
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text><rect x="{name_w}" y="{}" width="{:.1}" height="14" fill="{}"/><text x="{:.1}" y="{}">{}</text>"#,
            name_w - 6.0,
            y + 11.0,
            escape(name),
            y,
            v / max * bar_w,
            PALETTE[0],
            name_w + v / max * bar_w + 5.0,
            y + 11.0,
            label(*v)
        );
    }
    if items.is_empty() {
        let _ = write!(svg, r#"<text x="10" y="{}">(none)</text>"#, TOP + 11.0);
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(0.0, 340.0, 5), vec![0.0, 100.0, 200.0, 300.0]);
    }

    #[test]
    fn charts_escape_text_and_link_nothing() {
        let c = TimeChart {
            title: "a < b & c",
            x_label: "seconds",
            y_label: "jobs/s",
            series: vec![Series {
                name: "x".into(),
                points: vec![(0.0, 1.0), (1.0, 2.0)],
            }],
            bands: &[Band {
                from: 0.0,
                to: 1.0,
                label: "warm<up>".into(),
            }],
            markers: &[Marker {
                at: 0.5,
                label: "kill".into(),
            }],

            x_range: (0.0, 1.0),
        }
        .render();
        assert!(c.starts_with("<svg") && c.ends_with("</svg>"));
        assert!(c.contains("a &lt; b &amp; c") && c.contains("warm&lt;up&gt;"));
        assert!(!c.contains("http"));
    }
}
