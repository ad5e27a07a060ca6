//! What commands print: `-o table|json|csv|markdown`, as kubectl does
//! (plus markdown, fit for a pull-request comment).
//!
//! A command builds one [`Table`] (or one JSON document) and [`Printer`]
//! renders it. `-o json` always prints exactly one JSON document: a table
//! becomes an array of objects, so machines never parse columns.

use std::io::{self, Write};

use clap::ValueEnum;
use serde_json::{Map, Value};

/// `-o/--output`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Aligned columns for people.
    #[default]
    Table,
    /// One JSON document.
    Json,
    /// RFC 4180 CSV with a header row.
    Csv,
    /// GitHub-flavoured Markdown tables (for pull-request comments).
    Markdown,
    /// One self-contained HTML page with SVG charts (`annal report`; other
    /// commands print tables).
    Html,
}

/// Rows with named columns. Cells are JSON values so `-o json` keeps types.
pub struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<Value>>,
}

impl Table {
    pub fn new(columns: &[&str]) -> Self {
        Table {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<Value>) {
        debug_assert_eq!(row.len(), self.columns.len());
        self.rows.push(row);
    }

    fn to_json(&self) -> Value {
        Value::Array(
            self.rows
                .iter()
                .map(|row| {
                    let map: Map<String, Value> = self
                        .columns
                        .iter()
                        .zip(row)
                        .map(|(c, v)| (c.to_string(), v.clone()))
                        .collect();
                    Value::Object(map)
                })
                .collect(),
        )
    }
}

/// Renders tables and documents in the chosen format.
pub struct Printer {
    pub format: OutputFormat,
}

impl Printer {
    pub fn table(&self, table: &Table) -> io::Result<()> {
        self.table_to(table, &mut io::stdout().lock())
    }

    /// [`Printer::table`] into `out` (a file for `--out`).
    pub fn table_to(&self, table: &Table, out: &mut dyn Write) -> io::Result<()> {
        match self.format {
            OutputFormat::Json => writeln!(out, "{}", pretty(&table.to_json())),
            OutputFormat::Csv => {
                write_csv_row(out, table.columns.iter().map(|c| c.to_string()))?;
                for row in &table.rows {
                    write_csv_row(out, row.iter().map(cell))?;
                }
                Ok(())
            }
            OutputFormat::Markdown => {
                let md = |c: &str| c.replace('|', "\\|").replace('\n', " ");
                let header: Vec<String> = table.columns.iter().map(|c| md(c)).collect();
                writeln!(out, "| {} |", header.join(" | "))?;
                writeln!(out, "|{}", "---|".repeat(header.len()))?;
                for row in &table.rows {
                    let cells: Vec<String> = row.iter().map(|v| md(&cell(v))).collect();
                    writeln!(out, "| {} |", cells.join(" | "))?;
                }
                Ok(())
            }
            OutputFormat::Table | OutputFormat::Html => {
                let cells: Vec<Vec<String>> = table
                    .rows
                    .iter()
                    .map(|r| r.iter().map(cell).collect())
                    .collect();
                let mut widths: Vec<usize> = table.columns.iter().map(|c| c.len()).collect();
                for row in &cells {
                    for (w, c) in widths.iter_mut().zip(row) {
                        *w = (*w).max(c.chars().count());
                    }
                }
                let header: Vec<String> = table.columns.iter().map(|c| c.to_uppercase()).collect();
                write_aligned(out, &header, &widths)?;
                for row in &cells {
                    write_aligned(out, row, &widths)?;
                }
                Ok(())
            }
        }
    }

    /// Prints a single record: `-o json` prints the object, `-o csv` one
    /// header and one row, `-o table` the `human` text.
    pub fn record(&self, value: &Value, human: &str) -> io::Result<()> {
        let mut out = io::stdout().lock();
        match self.format {
            OutputFormat::Json => writeln!(out, "{}", pretty(value)),
            OutputFormat::Csv => {
                let Some(map) = value.as_object() else {
                    return writeln!(out, "{}", cell(value));
                };
                write_csv_row(&mut out, map.keys().cloned())?;
                write_csv_row(&mut out, map.values().map(cell))
            }
            OutputFormat::Table | OutputFormat::Markdown | OutputFormat::Html => {
                writeln!(out, "{human}")
            }
        }
    }

    /// One JSON document: `value` with `extra` top-level fields added (a
    /// recovery gate's verdict).
    pub fn document(
        &self,
        value: &impl serde::Serialize,
        extra: &[(&str, Value)],
    ) -> io::Result<()> {
        let mut doc = serde_json::to_value(value).map_err(io::Error::other)?;
        if let Value::Object(map) = &mut doc {
            for (k, v) in extra {
                map.insert(k.to_string(), v.clone());
            }
        }
        self.record(&doc, "")
    }

    /// A heading before a command's tables: `### title` and `text` in
    /// markdown, `text` alone in table output, nothing in JSON and CSV.
    pub fn heading(&self, title: &str, text: &str) -> io::Result<()> {
        match self.format {
            OutputFormat::Markdown => self.prose(&format!("### {title}\n\n{text}")),
            _ => self.prose(text),
        }
    }

    /// Prints a line of prose in table and markdown output (a heading or a
    /// verdict); JSON and CSV stay one document.
    pub fn prose(&self, text: &str) -> io::Result<()> {
        match self.format {
            OutputFormat::Table | OutputFormat::Markdown | OutputFormat::Html => {
                writeln!(io::stdout().lock(), "{text}")
            }
            OutputFormat::Json | OutputFormat::Csv => Ok(()),
        }
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// Text of one cell: strings bare, null empty, arrays comma-joined.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(cell).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

fn write_aligned(
    out: &mut (impl Write + ?Sized),
    cells: &[String],
    widths: &[usize],
) -> io::Result<()> {
    let last = cells.len().saturating_sub(1);
    for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
        if i == last {
            writeln!(out, "{c}")?;
        } else {
            write!(out, "{c:<w$}   ")?;
        }
    }
    Ok(())
}

fn write_csv_row(
    out: &mut (impl Write + ?Sized),
    cells: impl Iterator<Item = String>,
) -> io::Result<()> {
    let line: Vec<String> = cells
        .map(|c| {
            if c.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c
            }
        })
        .collect();
    writeln!(out, "{}", line.join(","))
}
