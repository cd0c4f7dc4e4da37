//! Turning measurements into what people read: the aligned text table with ratios, the
//! Markdown table for RESULTS.md, CSV, and a hand-written SVG chart of throughput against
//! message size (log-scale x axis, one line per implementation).

use std::fmt::Write as _;

use crate::clock::median;

/// What an implementation is to the ratios.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Ours,
    Peer,
    /// A bound rather than an AEAD (the AES-CTR-only loop).
    Roofline,
}

/// All rounds of one implementation on one operation at one size.
#[derive(Clone, Debug)]
pub struct Entry {
    /// e.g. `AES-128-GCM`.
    pub alg: String,
    /// e.g. `seal`.
    pub op: String,
    pub implementation: String,
    pub kind: Kind,
    pub size: usize,
    /// MB/s of each round.
    pub rounds: Vec<f64>,
}

impl Entry {
    pub fn median(&self) -> f64 {
        median(&self.rounds)
    }

    fn group(&self) -> String {
        format!("{} {}", self.alg, self.op)
    }
}

/// Everything one run measured, in the order it was measured.
#[derive(Clone, Debug, Default)]
pub struct Results {
    pub entries: Vec<Entry>,
}

/// One table: an algorithm and operation, its sizes and the median of each implementation.
struct Table<'a> {
    title: String,
    sizes: Vec<usize>,
    rows: Vec<(&'a str, Kind, Vec<Option<f64>>)>,
}

impl Table<'_> {
    fn primary_ours(&self) -> Option<usize> {
        self.rows
            .iter()
            .position(|r| r.0 == "ours")
            .or_else(|| self.rows.iter().position(|r| r.1 == Kind::Ours))
    }

    /// Best peer per size: (name, MB/s).
    fn best_peer(&self) -> Vec<Option<(&str, f64)>> {
        (0..self.sizes.len())
            .map(|i| {
                self.rows
                    .iter()
                    .filter(|r| r.1 == Kind::Peer)
                    .filter_map(|r| r.2[i].map(|v| (r.0, v)))
                    .max_by(|a, b| a.1.total_cmp(&b.1))
            })
            .collect()
    }

    fn roofline(&self) -> Option<usize> {
        self.rows.iter().position(|r| r.1 == Kind::Roofline)
    }

    /// Ratio rows: label and one value per size.
    fn ratios(&self) -> Vec<(String, Vec<Option<f64>>)> {
        let mut out = Vec::new();
        let Some(o) = self.primary_ours() else {
            return out;
        };
        let ours = &self.rows[o].2;
        let best = self.best_peer();
        if best.iter().any(Option::is_some) {
            let v = (0..self.sizes.len())
                .map(|i| Some(ours[i]? / best[i]?.1))
                .collect();
            out.push((format!("{} / best peer", self.rows[o].0), v));
        }
        // Forced back ends against the default one, and the plain AES-NI path against
        // RustCrypto (the two pure-Rust answers on a CPU without VAES).
        for r in self
            .rows
            .iter()
            .filter(|r| r.1 == Kind::Ours && r.0 != self.rows[o].0)
        {
            let v = (0..self.sizes.len())
                .map(|i| Some(r.2[i]? / ours[i]?))
                .collect();
            out.push((format!("{} / {}", r.0, self.rows[o].0), v));
        }
        let by_name = |n: &str| self.rows.iter().find(|r| r.0 == n);
        if let (Some(a), Some(rc)) = (by_name("ours-aesni"), by_name("rustcrypto")) {
            let v = (0..self.sizes.len())
                .map(|i| Some(a.2[i]? / rc.2[i]?))
                .collect();
            out.push(("ours-aesni / rustcrypto".to_string(), v));
        }
        if let Some(r) = self.roofline() {
            let roof = &self.rows[r].2;
            let v = (0..self.sizes.len())
                .map(|i| Some(ours[i]? / roof[i]?))
                .collect();
            out.push((format!("{} / AES-CTR", self.rows[o].0), v));
        }
        out
    }
}

impl Results {
    pub fn push(&mut self, e: Entry) {
        self.entries.push(e);
    }

    /// Adds one round's figure, creating the entry on first sight.
    pub fn add_round(
        &mut self,
        alg: &str,
        op: &str,
        implementation: &str,
        kind: Kind,
        size: usize,
        mb_s: f64,
    ) {
        let found = self.entries.iter_mut().find(|e| {
            e.alg == alg && e.op == op && e.implementation == implementation && e.size == size
        });
        match found {
            Some(e) => e.rounds.push(mb_s),
            None => self.entries.push(Entry {
                alg: alg.to_string(),
                op: op.to_string(),
                implementation: implementation.to_string(),
                kind,
                size,
                rounds: vec![mb_s],
            }),
        }
    }

    fn tables(&self) -> Vec<Table<'_>> {
        let mut groups: Vec<String> = Vec::new();
        for e in &self.entries {
            let g = e.group();
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        groups
            .into_iter()
            .map(|g| {
                let in_group: Vec<&Entry> =
                    self.entries.iter().filter(|e| e.group() == g).collect();
                let mut sizes: Vec<usize> = in_group.iter().map(|e| e.size).collect();
                sizes.sort_unstable();
                sizes.dedup();
                let mut names: Vec<(&str, Kind)> = Vec::new();
                for e in &in_group {
                    if !names.iter().any(|n| n.0 == e.implementation) {
                        names.push((&e.implementation, e.kind));
                    }
                }
                // Ours first, peers next, the roofline last; measurement order within each.
                names.sort_by_key(|n| match n.1 {
                    Kind::Ours => 0,
                    Kind::Peer => 1,
                    Kind::Roofline => 2,
                });
                let rows = names
                    .into_iter()
                    .map(|(name, kind)| {
                        let vals = sizes
                            .iter()
                            .map(|s| {
                                in_group
                                    .iter()
                                    .find(|e| e.implementation == name && e.size == *s)
                                    .map(|e| e.median())
                            })
                            .collect();
                        (name, kind, vals)
                    })
                    .collect();
                Table {
                    title: g,
                    sizes,
                    rows,
                }
            })
            .collect()
    }

    /// The aligned plain-text tables printed at the end of a run.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for t in self.tables() {
            let w0 = t
                .rows
                .iter()
                .map(|r| r.0.len())
                .chain([24])
                .max()
                .unwrap_or(24);
            let _ = writeln!(s, "\n{}, MB/s (median of rounds)", t.title);
            let _ = write!(s, "{:<w0$}", "bytes");
            for z in &t.sizes {
                let _ = write!(s, " {z:>9}");
            }
            s.push('\n');
            for (name, _, vals) in &t.rows {
                let _ = write!(s, "{name:<w0$}");
                for v in vals {
                    match v {
                        Some(v) => {
                            let _ = write!(s, " {v:>9.0}");
                        }
                        None => s.push_str("         -"),
                    }
                }
                s.push('\n');
            }
            let best = t.best_peer();
            // A best-peer row only means something next to one of ours.
            if t.primary_ours().is_some() && best.iter().any(Option::is_some) {
                let _ = write!(s, "{:<w0$}", "best peer");
                for b in &best {
                    match b {
                        Some((n, _)) => {
                            let _ = write!(s, " {:>9}", shorten(n, 9));
                        }
                        None => s.push_str("         -"),
                    }
                }
                s.push('\n');
            }
            for (label, vals) in t.ratios() {
                let _ = write!(s, "{label:<w0$}");
                for v in vals {
                    match v {
                        Some(v) => {
                            let _ = write!(s, " {v:>8.2}x");
                        }
                        None => s.push_str("         -"),
                    }
                }
                s.push('\n');
            }
        }
        s
    }

    /// The same tables in Markdown, for RESULTS.md.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        for t in self.tables() {
            let _ = writeln!(s, "\n### {}, MB/s\n", t.title);
            s.push_str("| implementation |");
            for z in &t.sizes {
                let _ = write!(s, " {z} |");
            }
            s.push_str("\n|---|");
            for _ in &t.sizes {
                s.push_str("---:|");
            }
            s.push('\n');
            for (name, _, vals) in &t.rows {
                let _ = write!(s, "| {name} |");
                for v in vals {
                    match v {
                        Some(v) => {
                            let _ = write!(s, " {v:.0} |");
                        }
                        None => s.push_str(" - |"),
                    }
                }
                s.push('\n');
            }
            let best = t.best_peer();
            // A best-peer row only means something next to one of ours.
            if t.primary_ours().is_some() && best.iter().any(Option::is_some) {
                s.push_str("| best peer |");
                for b in &best {
                    match b {
                        Some((n, v)) => {
                            let _ = write!(s, " {v:.0} {n} |");
                        }
                        None => s.push_str(" - |"),
                    }
                }
                s.push('\n');
            }
            for (label, vals) in t.ratios() {
                let _ = write!(s, "| **{label}** |");
                for v in vals {
                    match v {
                        Some(v) => {
                            let _ = write!(s, " **{v:.2}** |");
                        }
                        None => s.push_str(" - |"),
                    }
                }
                s.push('\n');
            }
        }
        s
    }

    /// One line per implementation, operation and size; MB/s median, min and max of rounds.
    pub fn csv(&self) -> String {
        let mut s = String::from(
            "algorithm,operation,bytes,implementation,kind,rounds,mb_per_s_median,mb_per_s_min,mb_per_s_max\n",
        );
        for e in &self.entries {
            let min = e.rounds.iter().copied().fold(f64::INFINITY, f64::min);
            let max = e.rounds.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let kind = match e.kind {
                Kind::Ours => "ours",
                Kind::Peer => "peer",
                Kind::Roofline => "roofline",
            };
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{:.1},{:.1},{:.1}",
                e.alg,
                e.op,
                e.size,
                e.implementation,
                kind,
                e.rounds.len(),
                e.median(),
                min,
                max
            );
        }
        s
    }

    /// An SVG chart: one panel per algorithm and operation (two to a row), MB/s against
    /// message size on a log scale, one coloured line per implementation, a shared legend.
    pub fn svg(&self, title: &str) -> String {
        let tables = self.tables();
        let mut names: Vec<(&str, Kind)> = Vec::new();
        for t in &tables {
            for r in &t.rows {
                if !names.iter().any(|n| n.0 == r.0) {
                    names.push((r.0, r.1));
                }
            }
        }
        const PW: f64 = 460.0;
        const PH: f64 = 300.0;
        const ML: f64 = 70.0;
        const MT: f64 = 40.0;
        const GAP: f64 = 40.0;
        let cols = tables.len().clamp(1, 2);
        let prow = tables.len().div_ceil(cols).max(1);
        let legend_rows = names.len().div_ceil(4).max(1);
        let width = ML + cols as f64 * (PW + GAP + ML) - ML;
        let height = 50.0 + prow as f64 * (PH + MT + 50.0) + legend_rows as f64 * 22.0 + 20.0;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(
            s,
            r#"<text x="{:.0}" y="24" font-size="16" text-anchor="middle">{}</text>"#,
            width / 2.0,
            escape(title)
        );
        for (ti, t) in tables.iter().enumerate() {
            let ox = ML + (ti % cols) as f64 * (PW + GAP + ML);
            let oy = 50.0 + MT + (ti / cols) as f64 * (PH + MT + 50.0);
            let ymax = nice_ceiling(
                t.rows
                    .iter()
                    .flat_map(|r| r.2.iter().flatten().copied())
                    .fold(0.0, f64::max),
            );
            let (lo, hi) = match (t.sizes.first(), t.sizes.last()) {
                (Some(&a), Some(&b)) if b > a => ((a as f64).log2(), (b as f64).log2()),
                (Some(&a), _) => ((a as f64).log2() - 1.0, (a as f64).log2() + 1.0),
                _ => continue,
            };
            let x = |size: usize| ox + ((size as f64).log2() - lo) / (hi - lo) * PW;
            let y = |v: f64| oy + PH - v / ymax * PH;
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="14" text-anchor="middle">{}, MB/s</text>"#,
                ox + PW / 2.0,
                oy - 12.0,
                escape(&t.title)
            );
            let _ = writeln!(
                s,
                r##"<rect x="{ox:.1}" y="{oy:.1}" width="{PW}" height="{PH}" fill="none" stroke="#444"/>"##
            );
            for k in 0..=5 {
                let v = ymax * k as f64 / 5.0;
                let yy = y(v);
                let _ = writeln!(
                    s,
                    r##"<line x1="{ox:.1}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{v:.0}</text>"##,
                    ox + PW,
                    ox - 6.0,
                    yy + 4.0
                );
            }
            for &z in &t.sizes {
                let xx = x(z);
                let _ = writeln!(
                    s,
                    r##"<line x1="{xx:.1}" y1="{oy:.1}" x2="{xx:.1}" y2="{:.1}" stroke="#eee"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{z}</text>"##,
                    oy + PH,
                    oy + PH + 16.0
                );
            }
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">message size, bytes (log scale)</text>"#,
                ox + PW / 2.0,
                oy + PH + 34.0
            );
            for (name, kind, vals) in &t.rows {
                let ci = names.iter().position(|n| n.0 == *name).unwrap_or(0);
                let pts: Vec<String> = t
                    .sizes
                    .iter()
                    .zip(vals)
                    .filter_map(|(z, v)| v.map(|v| format!("{:.1},{:.1}", x(*z), y(v))))
                    .collect();
                let _ = writeln!(
                    s,
                    r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="{}"{}/>"#,
                    pts.join(" "),
                    colour(ci),
                    if *kind == Kind::Ours { 3 } else { 2 },
                    dash(*kind)
                );
                for p in &pts {
                    let (px, py) = p.split_once(',').unwrap_or(("0", "0"));
                    let _ = writeln!(
                        s,
                        r#"<circle cx="{px}" cy="{py}" r="2.5" fill="{}"/>"#,
                        colour(ci)
                    );
                }
            }
        }
        let ly = 50.0 + prow as f64 * (PH + MT + 50.0) + 10.0;
        for (i, (name, kind)) in names.iter().enumerate() {
            let lx = ML + (i % 4) as f64 * 200.0;
            let yy = ly + (i / 4) as f64 * 22.0;
            let _ = writeln!(
                s,
                r#"<line x1="{lx:.1}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="{}" stroke-width="3"{}/><text x="{:.1}" y="{:.1}">{}</text>"#,
                lx + 30.0,
                colour(i),
                dash(*kind),
                lx + 36.0,
                yy + 4.0,
                escape(name)
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

fn dash(kind: Kind) -> &'static str {
    match kind {
        Kind::Roofline => r#" stroke-dasharray="6,4""#,
        _ => "",
    }
}

fn colour(i: usize) -> &'static str {
    const C: [&str; 10] = [
        "#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
        "#7f7f7f", "#bcbd22",
    ];
    C[i % C.len()]
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn shorten(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The smallest 1, 2 or 5 times a power of ten at or above `v`, for the y axis.
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|c| *c >= v)
        .unwrap_or(10.0 * p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Results {
        let mut r = Results::default();
        for (imp, kind, v) in [
            ("ours", Kind::Ours, 300.0),
            ("ring", Kind::Peer, 200.0),
            ("rustcrypto", Kind::Peer, 100.0),
            ("AES-CTR", Kind::Roofline, 600.0),
        ] {
            for size in [16, 16384] {
                for round in [1.0, 0.5, 1.5] {
                    r.add_round("AES-128-GCM", "seal", imp, kind, size, v * round);
                }
            }
        }
        r
    }

    #[test]
    fn ratios_use_medians_and_best_peer() {
        let r = sample();
        let t = &r.tables()[0];
        assert_eq!(t.sizes, vec![16, 16384]);
        assert_eq!(t.best_peer()[0], Some(("ring", 200.0)));
        let ratios = t.ratios();
        assert_eq!(ratios[0].1[0], Some(1.5));
        assert_eq!(ratios[1].1[1], Some(0.5));
    }

    #[test]
    fn outputs_mention_everything() {
        let r = sample();
        let text = r.text();
        assert!(text.contains("ours / best peer"));
        assert!(text.contains("1.50x"));
        let md = r.markdown();
        assert!(md.contains("| best peer | 200 ring |"));
        let csv = r.csv();
        assert_eq!(csv.lines().count(), 1 + 8);
        assert!(csv.contains("AES-128-GCM,seal,16,ours,ours,3,300.0,150.0,450.0"));
        let svg = r.svg("t");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 4);
    }

    #[test]
    fn nice_numbers() {
        assert_eq!(nice_ceiling(11896.0), 20000.0);
        assert_eq!(nice_ceiling(4100.0), 5000.0);
        assert_eq!(nice_ceiling(100.0), 100.0);
    }
}
