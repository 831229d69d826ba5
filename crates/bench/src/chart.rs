//! SVG charts of benchmark results, written by hand.
//!
//! The SVG is plain text: `<text>` elements with a generic `sans-serif` font family that the
//! viewer resolves, so neither building nor running needs a font file or a font library.
//! Text widths are estimated (about 0.6 em per character), which is enough to lay out
//! labels and legends without overlap.
//!
//! Two kinds of chart:
//! - [`latency_vs_throughput`]: the classic latency-versus-throughput curve, one line with
//!   point markers per [`Series`];
//! - [`bars`]: a horizontal bar chart with the value printed next to each bar.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::report::RunResult;

/// One curve of a latency-versus-throughput chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    /// `(throughput in ops/s, latency in ms)`, drawn in this order.
    pub points: Vec<(f64, f64)>,
}

/// Distinct colours (Tableau 10), cycled; beyond ten series the lines are also dashed.
const PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

const FONT: &str = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\"";
const TITLE_SIZE: f64 = 16.0;
const LABEL_SIZE: f64 = 13.0;
const TICK_SIZE: f64 = 11.0;

/// Writes a latency-versus-throughput chart to `path`: x is throughput (ops/s), y is latency
/// (ms, named by `latency_label`), one line with point markers per series, and a legend.
/// Both axes start at 0. Points with a non-finite or negative coordinate are skipped; a
/// chart with no point at all says "no data".
pub fn latency_vs_throughput(
    path: &Path,
    title: &str,
    latency_label: &str,
    series: &[Series],
) -> Result<(), String> {
    write_file(path, &latency_svg(title, latency_label, series))
}

/// Writes a horizontal bar chart to `path`: one bar per `(label, value)`, the label left of
/// the bar and the value printed at its end; the value axis is named by `value_label` and
/// includes 0. A non-finite value draws no bar and prints "n/a"; no bars at all gives a
/// chart that says "no data".
pub fn bars(
    path: &Path,
    title: &str,
    value_label: &str,
    bars: &[(String, f64)],
) -> Result<(), String> {
    write_file(path, &bars_svg(title, value_label, bars))
}

/// Groups results by (system, config, workload), in the order each group first appears,
/// into series labelled "system config workload" whose points are `(ops_per_s, p50_ms)`
/// sorted by throughput.
pub fn from_results(results: &[RunResult]) -> Vec<Series> {
    let mut index: HashMap<(&str, &str, &str), usize> = HashMap::new();
    let mut out: Vec<Series> = Vec::new();
    for r in results {
        let key = (r.system.as_str(), r.config.as_str(), r.workload.as_str());
        let i = *index.entry(key).or_insert_with(|| {
            out.push(Series {
                label: format!("{} {} {}", r.system, r.config, r.workload),
                points: Vec::new(),
            });
            out.len() - 1
        });
        out[i].points.push((r.ops_per_s, r.p50_ms));
    }
    for s in &mut out {
        s.points
            .sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    }
    out
}

fn write_file(path: &Path, svg: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir).map_err(|e| {
                format!(
                    "cannot write chart {}: cannot create {}: {e}",
                    path.display(),
                    dir.display()
                )
            })?;
        }
    }
    std::fs::write(path, svg).map_err(|e| format!("cannot write chart {}: {e}", path.display()))
}

// ---------------------------------------------------------------------------------------
// latency versus throughput

fn latency_svg(title: &str, latency_label: &str, series: &[Series]) -> String {
    const PLOT_W: f64 = 640.0;
    const PLOT_H: f64 = 420.0;
    const LEFT: f64 = 84.0;
    const TOP: f64 = 56.0;
    const BOTTOM: f64 = 64.0;
    const LEGEND_ROW: f64 = 22.0;

    let clean: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .copied()
                .filter(|&(x, y)| x.is_finite() && y.is_finite() && x >= 0.0 && y >= 0.0)
                .collect()
        })
        .collect();
    let any = clean.iter().any(|p| !p.is_empty());

    // Legend to the right of the plot, one row per series.
    let legend_text_w = series
        .iter()
        .map(|s| text_width(&s.label, LABEL_SIZE))
        .fold(0.0, f64::max);
    let legend_w = if series.is_empty() {
        0.0
    } else {
        legend_text_w + 44.0
    };
    let width = (LEFT + PLOT_W + 24.0 + legend_w + 16.0).max(text_width(title, TITLE_SIZE) + 40.0);
    let legend_h = series.len() as f64 * LEGEND_ROW;
    let height = (TOP + PLOT_H + BOTTOM).max(TOP + legend_h + 16.0);

    let mut svg = open_svg(width, height, title);

    let (x_max, x_step) = nice_axis(clean.iter().flatten().map(|p| p.0).fold(0.0, f64::max));
    let (y_max, y_step) = nice_axis(clean.iter().flatten().map(|p| p.1).fold(0.0, f64::max));
    let px = |x: f64| LEFT + x / x_max * PLOT_W;
    let py = |y: f64| TOP + PLOT_H - y / y_max * PLOT_H;

    // Grid and ticks.
    let mut v = 0.0;
    let mut i = 0;
    while v <= x_max * (1.0 + 1e-9) {
        x_tick(
            &mut svg,
            px(v),
            TOP,
            TOP + PLOT_H,
            &tick_label(v, x_step, x_max),
        );
        i += 1;
        v = x_step * i as f64;
    }
    let mut v = 0.0;
    let mut i = 0;
    while v <= y_max * (1.0 + 1e-9) {
        let y = py(v);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e3e3e3" stroke-width="1"/>"##,
            LEFT + PLOT_W
        );
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="{TICK_SIZE}" {FONT} fill="#333">{}</text>"##,
            LEFT - 6.0,
            y + TICK_SIZE * 0.35,
            esc(&tick_label(v, y_step, y_max))
        );
        i += 1;
        v = y_step * i as f64;
    }
    // Frame and axis labels.
    let _ = writeln!(
        svg,
        r##"<rect x="{LEFT:.1}" y="{TOP:.1}" width="{PLOT_W:.1}" height="{PLOT_H:.1}" fill="none" stroke="#444" stroke-width="1"/>"##
    );
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="{LABEL_SIZE}" {FONT} fill="#000">throughput (ops/s)</text>"##,
        LEFT + PLOT_W / 2.0,
        TOP + PLOT_H + 42.0
    );
    let (lx, ly) = (20.0, TOP + PLOT_H / 2.0);
    let _ = writeln!(
        svg,
        r##"<text x="{lx:.1}" y="{ly:.1}" transform="rotate(-90 {lx:.1} {ly:.1})" text-anchor="middle" font-size="{LABEL_SIZE}" {FONT} fill="#000">{}</text>"##,
        esc(latency_label)
    );

    if any {
        for (k, pts) in clean.iter().enumerate() {
            let colour = PALETTE[k % PALETTE.len()];
            let dash = if k >= PALETTE.len() {
                r##" stroke-dasharray="6 3""##
            } else {
                ""
            };
            if pts.len() > 1 {
                let coords: Vec<String> = pts
                    .iter()
                    .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                    .collect();
                let _ = writeln!(
                    svg,
                    r##"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>"##,
                    coords.join(" ")
                );
            }
            for &(x, y) in pts {
                svg.push_str(&marker(k, px(x), py(y), colour));
            }
        }
    } else {
        no_data(&mut svg, LEFT + PLOT_W / 2.0, TOP + PLOT_H / 2.0);
    }

    // Legend.
    let lx0 = LEFT + PLOT_W + 24.0;
    for (k, s) in series.iter().enumerate() {
        let colour = PALETTE[k % PALETTE.len()];
        let dash = if k >= PALETTE.len() {
            r##" stroke-dasharray="6 3""##
        } else {
            ""
        };
        let y = TOP + 8.0 + k as f64 * LEGEND_ROW;
        let _ = writeln!(
            svg,
            r##"<line x1="{lx0:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{colour}" stroke-width="2"{dash}/>"##,
            lx0 + 28.0
        );
        svg.push_str(&marker(k, lx0 + 14.0, y, colour));
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" font-size="{LABEL_SIZE}" {FONT} fill="#000">{}</text>"##,
            lx0 + 36.0,
            y + LABEL_SIZE * 0.35,
            esc(&s.label)
        );
    }

    svg.push_str("</svg>\n");
    svg
}

/// A point marker: circle, square, triangle or diamond by series index.
fn marker(k: usize, x: f64, y: f64, colour: &str) -> String {
    let r = 4.0;
    match k % 4 {
        0 => format!(r##"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{colour}"/>"##) + "\n",
        1 => {
            format!(
                r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{colour}"/>"##,
                x - r,
                y - r,
                2.0 * r,
                2.0 * r
            ) + "\n"
        }
        2 => {
            format!(
                r##"<polygon points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" fill="{colour}"/>"##,
                x,
                y - r - 1.0,
                x - r - 1.0,
                y + r,
                x + r + 1.0,
                y + r
            ) + "\n"
        }
        _ => {
            format!(
                r##"<polygon points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" fill="{colour}"/>"##,
                x,
                y - r - 1.0,
                x + r + 1.0,
                y,
                x,
                y + r + 1.0,
                x - r - 1.0,
                y
            ) + "\n"
        }
    }
}

// ---------------------------------------------------------------------------------------
// bars

fn bars_svg(title: &str, value_label: &str, bars: &[(String, f64)]) -> String {
    const PLOT_W: f64 = 560.0;
    const TOP: f64 = 56.0;
    const BOTTOM: f64 = 64.0;
    const BAR_H: f64 = 22.0;
    const GAP: f64 = 12.0;
    const VALUE_ROOM: f64 = 90.0;

    let label_w = bars
        .iter()
        .map(|(l, _)| text_width(l, LABEL_SIZE))
        .fold(0.0, f64::max);
    let left = 20.0 + label_w + 12.0;
    let plot_h = if bars.is_empty() {
        160.0
    } else {
        bars.len() as f64 * (BAR_H + GAP) + GAP
    };
    let width = (left + PLOT_W + VALUE_ROOM + 16.0).max(text_width(title, TITLE_SIZE) + 40.0);
    let height = TOP + plot_h + BOTTOM;

    let mut svg = open_svg(width, height, title);

    let finite = || bars.iter().map(|b| b.1).filter(|v| v.is_finite());
    let hi = finite().fold(0.0, f64::max);
    let lo = finite().fold(0.0, f64::min);
    // A range that includes 0, with nice ticks on either side.
    let (v_min, v_max, step) = if lo < 0.0 {
        let (_, s) = nice_axis(hi.max(-lo));
        let lo_n = -((-lo) / s).ceil() * s;
        let hi_n = if hi > 0.0 { (hi / s).ceil() * s } else { 0.0 };
        (lo_n, hi_n, s)
    } else {
        let (m, s) = nice_axis(hi);
        (0.0, m, s)
    };
    let span = if v_max > v_min { v_max - v_min } else { 1.0 };
    let px = |v: f64| left + (v - v_min) / span * PLOT_W;

    // Grid and ticks.
    let mut i = 0;
    loop {
        let v = v_min + step * i as f64;
        if v > v_max * (1.0 + 1e-9) + 1e-12 {
            break;
        }
        x_tick(
            &mut svg,
            px(v),
            TOP,
            TOP + plot_h,
            &tick_label(v, step, v_max.max(-v_min)),
        );
        i += 1;
    }
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="{LABEL_SIZE}" {FONT} fill="#000">{}</text>"##,
        left + PLOT_W / 2.0,
        TOP + plot_h + 42.0,
        esc(value_label)
    );

    if bars.is_empty() {
        no_data(&mut svg, left + PLOT_W / 2.0, TOP + plot_h / 2.0);
    }
    let zero = px(0.0);
    for (k, (label, value)) in bars.iter().enumerate() {
        let y = TOP + GAP + k as f64 * (BAR_H + GAP);
        let mid = y + BAR_H / 2.0 + LABEL_SIZE * 0.35;
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{mid:.1}" text-anchor="end" font-size="{LABEL_SIZE}" {FONT} fill="#000">{}</text>"##,
            left - 12.0,
            esc(label)
        );
        if !value.is_finite() {
            let _ = writeln!(
                svg,
                r##"<text x="{:.1}" y="{mid:.1}" font-size="{LABEL_SIZE}" {FONT} fill="#888">n/a</text>"##,
                zero + 6.0
            );
            continue;
        }
        let end = px(*value);
        let (x0, w) = if end >= zero {
            (zero, end - zero)
        } else {
            (end, zero - end)
        };
        let colour = PALETTE[k % PALETTE.len()];
        let _ = writeln!(
            svg,
            r##"<rect x="{x0:.1}" y="{y:.1}" width="{w:.1}" height="{BAR_H:.1}" fill="{colour}"/>"##
        );
        // A negative value is printed right of the zero line, so it never runs into the labels.
        let tx = if *value >= 0.0 { end + 6.0 } else { zero + 6.0 };
        let _ = writeln!(
            svg,
            r##"<text x="{tx:.1}" y="{mid:.1}" font-size="{LABEL_SIZE}" {FONT} fill="#000">{}</text>"##,
            esc(&value_text(*value))
        );
    }
    // Value axis and the zero line.
    let _ = writeln!(
        svg,
        r##"<line x1="{left:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#444" stroke-width="1"/>"##,
        TOP + plot_h,
        left + PLOT_W,
        TOP + plot_h
    );
    let _ = writeln!(
        svg,
        r##"<line x1="{zero:.1}" y1="{TOP:.1}" x2="{zero:.1}" y2="{:.1}" stroke="#444" stroke-width="1"/>"##,
        TOP + plot_h
    );

    svg.push_str("</svg>\n");
    svg
}

// ---------------------------------------------------------------------------------------
// shared pieces

fn open_svg(width: f64, height: f64, title: &str) -> String {
    let mut svg = String::new();
    let _ = writeln!(svg, r##"<?xml version="1.0" encoding="UTF-8"?>"##);
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}">"##,
        w = width.ceil(),
        h = height.ceil()
    );
    let _ = writeln!(svg, "<title>{}</title>", esc(title));
    let _ = writeln!(
        svg,
        r##"<rect x="0" y="0" width="100%" height="100%" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="30" text-anchor="middle" font-size="{TITLE_SIZE}" font-weight="bold" {FONT} fill="#000">{}</text>"##,
        width / 2.0,
        esc(title)
    );
    svg
}

fn no_data(svg: &mut String, x: f64, y: f64) {
    let _ = writeln!(
        svg,
        r##"<text x="{x:.1}" y="{y:.1}" text-anchor="middle" font-size="18" {FONT} fill="#888">no data</text>"##
    );
}

/// Estimated width of `s` in pixels at `size`: generous for a proportional sans-serif font.
fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.6
}

/// XML-escapes text and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' && c != '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A nice axis from 0 to at least `max`: returns (axis maximum, tick step), about 5 ticks.
fn nice_axis(max: f64) -> (f64, f64) {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag);
    let top = (max / step * (1.0 - 1e-9)).ceil().max(1.0) * step;
    (top, step)
}

/// A tick label: `k`/`M` suffixes for large axes, just enough decimals for the step.
fn tick_label(v: f64, step: f64, axis_max: f64) -> String {
    if v.abs() < step * 1e-9 {
        return "0".to_string();
    }
    let (v, step, suffix) = if axis_max >= 1e6 && step >= 1e5 {
        (v / 1e6, step / 1e6, "M")
    } else if axis_max >= 1e4 && step >= 1e3 {
        (v / 1e3, step / 1e3, "k")
    } else {
        (v, step, "")
    };
    let decimals = decimals_for(step);
    let s = format!("{v:.decimals$}");
    let s = if s.starts_with('-') && s.trim_start_matches(['-', '0', '.']).is_empty() {
        s[1..].to_string()
    } else {
        s
    };
    format!("{s}{suffix}")
}

fn decimals_for(step: f64) -> usize {
    let mut d = 0;
    while d < 6
        && ((step * 10f64.powi(d as i32)).round() - step * 10f64.powi(d as i32)).abs() > 1e-6
    {
        d += 1;
    }
    d
}

/// A bar's value: thousands separators for large values, three significant digits for small.
fn value_text(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        let n = v.round() as i64;
        let digits = n.unsigned_abs().to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        if n < 0 {
            format!("-{out}")
        } else {
            out
        }
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a == 0.0 {
        "0".to_string()
    } else if a >= 0.01 {
        let d = (2 - a.log10().floor() as i32).clamp(0, 4) as usize;
        let s = format!("{v:.d$}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:.2e}")
    }
}

/// A vertical grid line at `x` from `top` to `bottom`, labelled below.
fn x_tick(svg: &mut String, x: f64, top: f64, bottom: f64, label: &str) {
    let _ = writeln!(
        svg,
        r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="#e3e3e3" stroke-width="1"/>"##
    );
    let _ = writeln!(
        svg,
        r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="{TICK_SIZE}" {FONT} fill="#333">{}</text>"##,
        bottom + 16.0,
        esc(label)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chart written at `path`, checked to be well formed.
    fn read_well_formed(path: &Path) -> String {
        let svg = std::fs::read_to_string(path).unwrap();
        assert_well_formed(&svg);
        svg
    }

    /// With `CHART_TEST_OUT=DIR`, copies the chart at `path` there under its own name, to be
    /// looked at.
    fn keep_for_inspection(path: &Path) {
        if let Ok(out) = std::env::var("CHART_TEST_OUT") {
            std::fs::copy(path, Path::new(&out).join(path.file_name().unwrap())).unwrap();
        }
    }

    /// A small well-formedness check: every tag closes in order, attribute quotes balance,
    /// and no raw `&` appears outside an entity.
    fn assert_well_formed(svg: &str) {
        assert!(
            svg.starts_with("<?xml") || svg.starts_with("<svg"),
            "bad start: {}",
            &svg[..40]
        );
        let mut stack: Vec<String> = Vec::new();
        let mut rest = svg;
        while let Some(open) = rest.find('<') {
            let text = &rest[..open];
            check_text(text);
            let close = rest[open..].find('>').expect("unclosed tag") + open;
            let tag = &rest[open + 1..close];
            rest = &rest[close + 1..];
            if tag.starts_with('?') {
                continue;
            }
            assert_eq!(
                tag.matches('"').count() % 2,
                0,
                "unbalanced quotes in <{tag}>"
            );
            if let Some(name) = tag.strip_prefix('/') {
                let top = stack.pop().expect("close without open");
                assert_eq!(top, name.trim(), "mismatched close");
            } else {
                check_text(tag);
                let name = tag
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .trim_end_matches('/')
                    .to_string();
                if !tag.ends_with('/') {
                    stack.push(name);
                }
            }
        }
        check_text(rest);
        assert!(stack.is_empty(), "unclosed elements: {stack:?}");
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    fn check_text(t: &str) {
        let mut s = t;
        while let Some(i) = s.find('&') {
            let after = &s[i + 1..];
            let ok = ["amp;", "lt;", "gt;", "quot;", "apos;"]
                .iter()
                .any(|e| after.starts_with(e));
            assert!(ok, "raw & in {t:?}");
            s = after;
        }
    }

    fn result(system: &str, config: &str, workload: &str, ops: f64, p50: f64) -> RunResult {
        crate::report::sample_run(system, config, workload, ops, p50)
    }

    fn sample_series() -> Vec<Series> {
        let curve = |scale: f64, knee: f64| -> Vec<(f64, f64)> {
            (1..=8)
                .map(|i| {
                    let x = knee * i as f64 / 8.0;
                    (x, scale * (1.0 + 1.0 / (1.05 - x / knee)))
                })
                .collect()
        };
        vec![
            Series {
                label: "plumb u1r0 write-1k".into(),
                points: curve(0.4, 42_000.0),
            },
            Series {
                label: "plumb u1r1-split write-1k".into(),
                points: curve(0.5, 35_000.0),
            },
            Series {
                label: "etcd 3 nodes write-1k".into(),
                points: curve(1.1, 18_000.0),
            },
            Series {
                label: "zookeeper 3 nodes write-1k".into(),
                points: curve(0.9, 22_000.0),
            },
            Series {
                label: "redis <single> & fsync".into(),
                points: vec![
                    (5_000.0, 0.3),
                    (f64::NAN, 1.0),
                    (20_000.0, f64::INFINITY),
                    (30_000.0, 0.8),
                ],
            },
        ]
    }

    #[test]
    fn latency_chart_is_written_and_well_formed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latency.svg");
        let series = sample_series();
        latency_vs_throughput(
            &path,
            "write-1k: p50 latency vs throughput",
            "p50 latency (ms)",
            &series,
        )
        .unwrap();
        let svg = read_well_formed(&path);
        assert!(svg.contains("write-1k: p50 latency vs throughput"));
        assert!(svg.contains("p50 latency (ms)"));
        for s in &series {
            assert!(svg.contains(&esc(&s.label)), "missing label {}", s.label);
        }
        assert!(svg.contains("redis &lt;single&gt; &amp; fsync"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        assert!(!svg.contains("no data"));
        // Five series: five polylines (the redis one keeps two finite points).
        assert_eq!(svg.matches("<polyline").count(), 5);
        keep_for_inspection(&path);
    }

    #[test]
    fn bar_chart_is_written_and_well_formed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/bars.svg");
        let data: Vec<(String, f64)> = vec![
            ("plumb u1r0".into(), 41_873.2),
            ("plumb u1r1-split".into(), 35_120.0),
            ("etcd 3 nodes".into(), 17_950.4),
            ("zookeeper 3 nodes".into(), 21_004.0),
            ("redis (no fsync)".into(), f64::NAN),
        ];
        bars(
            &path,
            "write-1k throughput, closed:32",
            "throughput (ops/s)",
            &data,
        )
        .unwrap();
        let svg = read_well_formed(&path);
        assert!(svg.contains("write-1k throughput, closed:32"));
        for (l, _) in &data {
            assert!(svg.contains(&esc(l)), "missing label {l}");
        }
        assert!(svg.contains("41,873"));
        assert!(svg.contains("n/a"));
        assert!(!svg.contains("NaN"));
        keep_for_inspection(&path);

        // Ratios, as for a fault scoreboard, including a negative value.
        let path = dir.path().join("ratios.svg");
        let data: Vec<(String, f64)> = vec![
            ("leader crash".into(), 0.62),
            ("follower crash".into(), 0.97),
            ("partition".into(), 0.0),
            ("clock skew (delta)".into(), -0.05),
        ];
        bars(&path, "throughput under faults / baseline", "ratio", &data).unwrap();
        let svg = read_well_formed(&path);
        assert!(svg.contains("0.62") && svg.contains("0.97") && svg.contains("-0.05"));
        keep_for_inspection(&path);
    }

    #[test]
    fn many_series_and_small_values() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("many.svg");
        let series: Vec<Series> = (0..12)
            .map(|k| Series {
                label: format!("system-{k} a rather long configuration name read-4k"),
                points: (1..=5)
                    .map(|i| {
                        (
                            i as f64 * 150.0 * (k + 1) as f64,
                            0.05 * i as f64 + 0.01 * k as f64,
                        )
                    })
                    .collect(),
            })
            .collect();
        latency_vs_throughput(&path, "many series", "p99 latency (ms)", &series).unwrap();
        let svg = read_well_formed(&path);
        assert!(svg.contains("stroke-dasharray"));
        for s in &series {
            assert!(svg.contains(&s.label));
        }
        keep_for_inspection(&path);
    }

    #[test]
    fn empty_input_says_no_data() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("empty-latency.svg");
        latency_vs_throughput(&p, "nothing", "p99 latency (ms)", &[]).unwrap();
        let svg = read_well_formed(&p);
        assert!(svg.contains("no data") && svg.contains("nothing"));

        let only_nan = [Series {
            label: "broken".into(),
            points: vec![(f64::NAN, f64::NAN)],
        }];
        latency_vs_throughput(&p, "nan only", "p50 latency (ms)", &only_nan).unwrap();
        let svg = read_well_formed(&p);
        assert!(svg.contains("no data") && svg.contains("broken"));

        let p = dir.path().join("empty-bars.svg");
        bars(&p, "no bars", "ops/s", &[]).unwrap();
        let svg = read_well_formed(&p);
        assert!(svg.contains("no data") && svg.contains("no bars"));

        // All-zero values still make a valid axis.
        bars(&p, "zeros", "ops/s", &[("a".into(), 0.0)]).unwrap();
        read_well_formed(&p);
    }

    #[test]
    fn write_error_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        // A path whose "directory" is a regular file cannot be written.
        let file = dir.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        let path = file.join("chart.svg");
        let err = bars(&path, "t", "v", &[("a".into(), 1.0)]).unwrap_err();
        assert!(err.contains(&path.display().to_string()), "{err}");
        let err = latency_vs_throughput(&path, "t", "ms", &[]).unwrap_err();
        assert!(err.contains("chart.svg"), "{err}");
    }

    #[test]
    fn from_results_groups_and_sorts() {
        let results = vec![
            result("plumb", "u1r0", "write-1k", 3000.0, 2.0),
            result("etcd", "3 nodes", "write-1k", 800.0, 4.0),
            result("plumb", "u1r0", "write-1k", 1000.0, 1.0),
            result("plumb", "u1r0", "read-1k", 5000.0, 0.5),
            result("plumb", "u1r0", "write-1k", 2000.0, 1.5),
        ];
        let s = from_results(&results);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].label, "plumb u1r0 write-1k");
        assert_eq!(
            s[0].points,
            vec![(1000.0, 1.0), (2000.0, 1.5), (3000.0, 2.0)]
        );
        assert_eq!(s[1].label, "etcd 3 nodes write-1k");
        assert_eq!(s[1].points, vec![(800.0, 4.0)]);
        assert_eq!(s[2].label, "plumb u1r0 read-1k");
        assert!(from_results(&[]).is_empty());
    }

    #[test]
    fn axes_and_numbers() {
        assert_eq!(nice_axis(42_000.0), (50_000.0, 10_000.0));
        assert_eq!(nice_axis(9.3), (10.0, 2.0));
        assert_eq!(nice_axis(1.0), (1.0, 0.2));
        assert_eq!(nice_axis(0.0), (1.0, 0.2));
        assert_eq!(tick_label(20_000.0, 10_000.0, 50_000.0), "20k");
        assert_eq!(tick_label(0.4, 0.2, 1.0), "0.4");
        assert_eq!(tick_label(0.0, 10_000.0, 50_000.0), "0");
        assert_eq!(tick_label(-0.2, 0.2, 1.0), "-0.2");
        assert_eq!(tick_label(2.5, 2.5, 12.5), "2.5");
        assert_eq!(value_text(41_873.2), "41,873");
        assert_eq!(value_text(0.62), "0.62");
        assert_eq!(value_text(1.5), "1.5");
        assert_eq!(value_text(-0.05), "-0.05");
        assert_eq!(value_text(12.34), "12.3");
    }
}
