//! The reports as one self-contained HTML page: inline SVG charts drawn
//! with plotters, inline CSS, no script and no network, so the file reads
//! the same offline, attached to a ticket or archived with an audit.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use plotters::prelude::*;

use super::capacity::CapacityReport;
use super::cost::CostReport;

/// Chart size in pixels.
const WIDTH: u32 = 960;
const HEIGHT: u32 = 420;

/// The cost report: stacked bars of cost (or object-hours when unpriced)
/// per step by group, the `top` groups drawn and the rest as "other",
/// then the top-N table.
pub fn cost_page(r: &CostReport, top: usize) -> String {
    let priced = r.currency.is_some();
    let unit = if priced {
        match r.currency.as_deref() {
            Some("") | None => "cost".to_string(),
            Some(c) => format!("cost ({c})"),
        }
    } else {
        "object-hours".to_string()
    };
    let totals = r.totals();
    let shown: Vec<&str> = totals
        .iter()
        .take(top)
        .map(|(g, _, _)| g.as_str())
        .collect();
    let steps = step_starts(r.rows.iter().map(|row| row.step_start.to_string()));
    // value[step][series]: the shown groups, then "other".
    let mut value = vec![vec![0.0f64; shown.len() + 1]; steps.len()];
    for row in &r.rows {
        let Some(s) = steps.iter().position(|x| *x == row.step_start.to_string()) else {
            continue;
        };
        let series = shown
            .iter()
            .position(|g| *g == row.group)
            .unwrap_or(shown.len());
        value[s][series] += row.cost.unwrap_or(row.measures.object_hours);
    }
    let mut names: Vec<String> = shown.iter().map(|g| g.to_string()).collect();
    names.push("other".into());
    let chart = stacked_bars(
        &format!("{} by {} per step", capitalize(&unit), r.by),
        &unit,
        &steps,
        &names,
        &value,
    );

    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>annal cost report by {}</h1>\n<p class=\"meta\">{} to {}, steps of {}, {} groups, {} rows{}</p>\n",
        esc(r.by),
        r.from,
        r.to,
        duration(r.step_seconds),
        totals.len(),
        r.rows.len(),
        if priced { "" } else { "; no price table given: charted by object-hours" }
    );
    let _ = write!(
        body,
        "<section id=\"cost-chart\">\n<h2>{}</h2>\n{chart}\n</section>\n",
        esc(&capitalize(&unit))
    );
    let _ = write!(
        body,
        "<section id=\"top\">\n<h2>Top {} by {}</h2>\n<table>\n<thead><tr><th>{}</th><th>cost</th><th>syncs</th><th>sync s</th><th>render s</th><th>API requests</th><th>429s</th><th>applied bytes</th><th>object-hours</th><th>ledger bytes</th></tr></thead>\n<tbody>\n",
        shown.len(),
        esc(&unit),
        esc(r.by)
    );
    for (group, m, cost) in totals.iter().take(top) {
        let _ = writeln!(
            body,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1}</td><td class=\"n\">{:.1}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.2}</td><td class=\"n\">{}</td></tr>",
            esc(group),
            cost.map_or("-".to_string(), |c| format!("{c:.4}")),
            m.syncs,
            m.sync_seconds,
            m.render_seconds,
            m.api_requests,
            m.api_throttled,
            m.applied_bytes,
            m.object_hours,
            m.ledger_bytes
        );
    }
    body.push_str("</tbody>\n</table>\n</section>\n");
    page("annal cost report", &body)
}

/// The capacity report: for the `top` clusters with the most flagged
/// steps (then the largest fan-out), API and 429 rates per step with the
/// flagged steps shaded, then every flagged window with its reasons.
pub fn capacity_page(r: &CapacityReport, top: usize) -> String {
    let mut by_cluster: BTreeMap<&str, Vec<&super::CapacityRow>> = BTreeMap::new();
    for row in &r.rows {
        by_cluster.entry(&row.cluster).or_default().push(row);
    }
    let mut ranked: Vec<(&str, usize, u64)> = by_cluster
        .iter()
        .map(|(c, rows)| {
            let flagged = rows.iter().filter(|r| !r.flags.is_empty()).count();
            let fan_out = rows.iter().map(|r| r.fan_out).max().unwrap_or(0);
            (*c, flagged, fan_out)
        })
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(b.0)));

    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>annal capacity report</h1>\n<p class=\"meta\">{} to {}, steps of {}, {} clusters, {} flagged windows</p>\n",
        r.from,
        r.to,
        duration(r.step_seconds),
        by_cluster.len(),
        r.flagged()
    );
    body.push_str(
        "<section id=\"capacity-charts\">\n<h2>API and 429 rates (flagged windows shaded)</h2>\n",
    );
    for (cluster, _, _) in ranked.iter().take(top) {
        let rows = &by_cluster[cluster];
        let steps: Vec<String> = rows.iter().map(|r| r.step_start.to_string()).collect();
        let requests: Vec<f64> = rows.iter().map(|r| r.api_requests_per_second).collect();
        let throttled: Vec<f64> = rows.iter().map(|r| r.throttled_per_second).collect();
        let flagged: Vec<bool> = rows.iter().map(|r| !r.flags.is_empty()).collect();
        body.push_str(&lines(cluster, &steps, &requests, &throttled, &flagged));
        body.push('\n');
    }
    body.push_str("</section>\n<section id=\"flags\">\n<h2>Flagged windows</h2>\n<table>\n<thead><tr><th>cluster</th><th>step start</th><th>fan-out</th><th>API req/s</th><th>429/s</th><th>queue age s</th><th>why</th></tr></thead>\n<tbody>\n");
    for row in r.rows.iter().filter(|r| !r.flags.is_empty()) {
        let _ = writeln!(
            body,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.3}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            esc(&row.cluster),
            row.step_start,
            row.fan_out,
            row.api_requests_per_second,
            row.throttled_per_second,
            row.queue_age_seconds.map_or("-".into(), |a| format!("{a:.0}")),
            esc(&row.flags.join("; "))
        );
    }
    body.push_str("</tbody>\n</table>\n</section>\n");
    page("annal capacity report", &body)
}

/// Stacked bars: one bar per step, one colour per series.
fn stacked_bars(
    title: &str,
    unit: &str,
    steps: &[String],
    names: &[String],
    value: &[Vec<f64>],
) -> String {
    let mut svg = String::new();
    let top = value
        .iter()
        .map(|v| v.iter().sum::<f64>())
        .fold(0.0f64, f64::max)
        .max(f64::MIN_POSITIVE)
        * 1.1;
    let drawn = (|| -> Result<(), String> {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let n = steps.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..n, 0f64..top)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(steps.len().min(12))
            .x_label_formatter(&|x| label(steps, *x))
            .y_desc(unit)
            .draw()
            .map_err(|e| e.to_string())?;
        for (k, name) in names.iter().enumerate() {
            if value.iter().all(|v| v[k] == 0.0) {
                continue;
            }
            let color = Palette99::pick(k).to_rgba();
            let bars = value.iter().enumerate().map(move |(s, v)| {
                let base: f64 = v[..k].iter().sum();
                Rectangle::new(
                    [(s as f64 + 0.1, base), (s as f64 + 0.9, base + v[k])],
                    color.filled(),
                )
            });
            chart
                .draw_series(bars)
                .map_err(|e| e.to_string())?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())
    })();
    match drawn {
        Ok(()) => svg,
        Err(e) => format!("<p class=\"error\">chart not drawn: {}</p>", esc(&e)),
    }
}

/// API requests/s (left axis) and 429s/s (right axis: far smaller, and its
/// trend is what matters) over steps, with flagged steps shaded red.
fn lines(
    title: &str,
    steps: &[String],
    requests: &[f64],
    throttled: &[f64],
    flagged: &[bool],
) -> String {
    let mut svg = String::new();
    let ceiling = |v: &[f64]| {
        v.iter()
            .copied()
            .fold(0.0f64, f64::max)
            .max(f64::MIN_POSITIVE)
            * 1.15
    };
    let (top, top_throttled) = (ceiling(requests), ceiling(throttled));
    let drawn = (|| -> Result<(), String> {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT * 3 / 4)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let n = steps.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .right_y_label_area_size(70)
            .build_cartesian_2d(0f64..n, 0f64..top)
            .map_err(|e| e.to_string())?
            .set_secondary_coord(0f64..n, 0f64..top_throttled);
        chart
            .configure_mesh()
            .x_labels(steps.len().min(12))
            .x_label_formatter(&|x| label(steps, *x))
            .y_desc("API requests/s")
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .configure_secondary_axes()
            .y_desc("429/s")
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(
                flagged
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| **f)
                    .map(|(s, _)| {
                        Rectangle::new(
                            [(s as f64, 0.0), (s as f64 + 1.0, top)],
                            RED.mix(0.18).filled(),
                        )
                    }),
            )
            .map_err(|e| e.to_string())?
            .label("flagged window")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], RED.mix(0.3).filled()));
        let blue = RGBColor(31, 119, 180);
        let orange = RGBColor(230, 110, 0);
        chart
            .draw_series(LineSeries::new(midpoints(requests), blue.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label("API requests/s (left)")
            .legend(move |at| legend_line(at, blue));
        chart
            .draw_secondary_series(LineSeries::new(
                midpoints(throttled),
                orange.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?
            .label("429/s (right)")
            .legend(move |at| legend_line(at, orange));
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())
    })();
    match drawn {
        Ok(()) => svg,
        Err(e) => format!("<p class=\"error\">chart not drawn: {}</p>", esc(&e)),
    }
}

/// One point per step, at its middle.
fn midpoints(values: &[f64]) -> impl Iterator<Item = (f64, f64)> + '_ {
    values.iter().enumerate().map(|(s, v)| (s as f64 + 0.5, *v))
}

/// A line series' mark in the legend.
fn legend_line((x, y): (i32, i32), color: RGBColor) -> PathElement<(i32, i32)> {
    PathElement::new(vec![(x, y), (x + 12, y)], color.stroke_width(2))
}

/// The distinct step starts, in order.
fn step_starts(starts: impl Iterator<Item = String>) -> Vec<String> {
    let mut all: Vec<String> = starts.collect();
    all.sort();
    all.dedup();
    all
}

/// The x-axis label of position `x`: the step's start, `MM-DD hh:mm`.
fn label(steps: &[String], x: f64) -> String {
    let i = x.floor().max(0.0) as usize;
    steps
        .get(i)
        .map(|s| s.get(5..16).unwrap_or(s).replace('T', " "))
        .unwrap_or_default()
}

fn duration(seconds: u64) -> String {
    match seconds {
        s if s % 86400 == 0 => format!("{}d", s / 86400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// HTML text escaping.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n\
body {{ font-family: system-ui, sans-serif; margin: 2rem; color: #222; }}\n\
h1 {{ font-size: 1.5rem; }} h2 {{ font-size: 1.15rem; margin-top: 2rem; }}\n\
.meta {{ color: #555; }}\n\
svg {{ display: block; max-width: 100%; height: auto; border: 1px solid #ddd; margin: 0.5rem 0; }}\n\
table {{ border-collapse: collapse; font-size: 0.9rem; }}\n\
th, td {{ border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; }}\n\
td.n {{ text-align: right; font-variant-numeric: tabular-nums; }}\n\
</style>\n</head>\n<body>\n{}</body>\n</html>\n",
        esc(title),
        body
    )
}
