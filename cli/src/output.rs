//! What commands print: `-o table|wide|json|csv|markdown`, as kubectl does
//! (plus markdown, fit for a pull-request comment).
//!
//! `-o table` shows the columns a person reads first, so that a typical row
//! fits 120 columns (a command names them with [`RowStream::narrow`] or
//! [`Table::narrow`]); `-o wide` adds the rest, and the machine formats
//! (`json`, `csv`) and `markdown` always carry every column.
//!
//! A command builds one [`Table`] (or one JSON document) and [`Printer`]
//! renders it; a command whose rows grow with the ledger (inventory, sql,
//! log) writes them through a [`RowStream`] as they are computed instead,
//! so its memory does not grow with the answer. `-o json` always prints
//! exactly one JSON document: a table becomes an array of objects, so
//! machines never parse columns.

use std::io::{self, Write};

use clap::ValueEnum;
use serde_json::Value;

/// `-o/--output`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Aligned columns for people: the ones read first.
    #[default]
    Table,
    /// Aligned columns, all of them (kubectl's `-o wide`).
    Wide,
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
    narrow: Option<Vec<String>>,
    rows: Vec<Vec<Value>>,
}

impl Table {
    pub fn new(columns: &[&str]) -> Self {
        Table {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            narrow: None,
            rows: Vec::new(),
        }
    }

    /// The columns `-o table` shows, in this order (see
    /// [`RowStream::narrow`]).
    pub fn narrow(mut self, columns: &[&str]) -> Self {
        self.narrow = Some(columns.iter().map(|c| c.to_string()).collect());
        self
    }

    pub fn push(&mut self, row: Vec<Value>) {
        debug_assert_eq!(row.len(), self.columns.len());
        self.rows.push(row);
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
        let columns: Vec<&str> = table.columns.iter().map(String::as_str).collect();
        let mut stream = self.stream_to(&columns, out);
        if let Some(narrow) = &table.narrow {
            let narrow: Vec<&str> = narrow.iter().map(String::as_str).collect();
            stream = stream.narrow(&narrow);
        }
        for row in &table.rows {
            stream.push(row)?;
        }
        stream.finish()
    }

    /// Rows to stdout, written as they come (see [`RowStream`]).
    pub fn stream(&self, columns: &[&str]) -> RowStream<'static> {
        RowStream::new(
            self.format,
            columns,
            Box::new(io::BufWriter::with_capacity(64 << 10, io::stdout())),
        )
    }

    /// [`Printer::stream`] into `out`.
    pub fn stream_to<'a>(&self, columns: &[&str], out: &'a mut dyn Write) -> RowStream<'a> {
        RowStream::new(self.format, columns, Box::new(out))
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
            OutputFormat::Table
            | OutputFormat::Wide
            | OutputFormat::Markdown
            | OutputFormat::Html => writeln!(out, "{human}"),
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
            OutputFormat::Table
            | OutputFormat::Wide
            | OutputFormat::Markdown
            | OutputFormat::Html => writeln!(io::stdout().lock(), "{text}"),
            OutputFormat::Json | OutputFormat::Csv => Ok(()),
        }
    }
}

/// Rows in the chosen format, written as they are pushed: JSON as one
/// array written element by element, CSV and Markdown line by line. Aligned
/// tables need column widths, so they hold back the first [`WINDOW`] rows
/// to measure them and print the rest with those widths (a longer cell
/// shifts its line rather than the whole table being buffered).
pub struct RowStream<'a> {
    format: OutputFormat,
    columns: Vec<String>,
    /// `-o table`: the positions of the columns it shows, in their order.
    shown: Option<Vec<usize>>,
    out: Box<dyn Write + 'a>,
    rows: u64,
    /// Aligned tables: rows held back until the widths are known.
    window: Vec<Vec<String>>,
    widths: Option<Vec<usize>>,
    /// `-o json` inside a document: its fields before the rows' key.
    head: Option<String>,
}

/// Rows an aligned table measures before it prints.
pub const WINDOW: usize = 1000;

impl<'a> RowStream<'a> {
    fn new(format: OutputFormat, columns: &[&str], out: Box<dyn Write + 'a>) -> Self {
        RowStream {
            format,
            columns: columns.iter().map(|c| c.to_string()).collect(),
            shown: None,
            out,
            rows: 0,
            window: Vec::new(),
            widths: None,
            head: None,
        }
    }

    /// `-o json` prints one document, the fields of `head` and then the
    /// rows as an array under `key` (still written row by row); the other
    /// formats print the rows alone.
    pub fn within(mut self, head: &Value, key: &str) -> Self {
        let text = pretty(head);
        // `{ ...fields }` opened up to take one more field last.
        let text = text.strip_suffix('}').unwrap_or(&text).trim_end();
        let sep = if text.len() > 1 { "," } else { "" };
        self.head = Some(format!("{text}{sep}\n  {}: ", Value::from(key)));
        self
    }

    /// Shows only `columns` (in this order) in `-o table`; every other
    /// format keeps every column. A name that is not a column is a bug of
    /// the command, caught by its tests.
    pub fn narrow(mut self, columns: &[&str]) -> Self {
        if self.format == OutputFormat::Table {
            let shown = columns
                .iter()
                .filter_map(|c| self.columns.iter().position(|have| have == c))
                .collect::<Vec<_>>();
            debug_assert_eq!(
                shown.len(),
                columns.len(),
                "{columns:?} in {:?}",
                self.columns
            );
            self.shown = Some(shown);
        }
        self
    }

    /// Writes one row (one cell per column).
    pub fn push(&mut self, row: &[Value]) -> io::Result<()> {
        debug_assert_eq!(row.len(), self.columns.len());
        let first = self.rows == 0;
        self.rows += 1;
        match self.format {
            OutputFormat::Json => {
                if first {
                    if let Some(head) = &self.head {
                        self.out.write_all(head.as_bytes())?;
                    }
                }
                self.out.write_all(if first { b"[\n" } else { b",\n" })?;
                let mut text = Vec::with_capacity(512);
                serde_json::to_writer_pretty(&mut text, &RowObject(&self.columns, row))
                    .map_err(io::Error::other)?;
                // Indented one level, as the element of a pretty array.
                let mut indented = Vec::with_capacity(text.len() + 64);
                for line in text.split_inclusive(|b| *b == b'\n') {
                    indented.extend_from_slice(b"  ");
                    indented.extend_from_slice(line);
                }
                self.out.write_all(&indented)
            }
            OutputFormat::Csv => {
                if first {
                    write_csv_row(&mut self.out, self.columns.iter().cloned())?;
                }
                write_csv_row(&mut self.out, row.iter().map(cell))
            }
            OutputFormat::Markdown => {
                if first {
                    self.markdown_header()?;
                }
                let cells: Vec<String> = row.iter().map(|v| markdown(&cell(v))).collect();
                writeln!(self.out, "| {} |", cells.join(" | "))
            }
            OutputFormat::Table | OutputFormat::Wide | OutputFormat::Html => {
                let cells: Vec<String> = match &self.shown {
                    Some(shown) => shown.iter().map(|&i| cell(&row[i])).collect(),
                    None => row.iter().map(cell).collect(),
                };
                match &self.widths {
                    Some(widths) => write_aligned(&mut self.out, &cells, widths),
                    None => {
                        self.window.push(cells);
                        if self.window.len() >= WINDOW {
                            self.flush_window()?;
                        }
                        Ok(())
                    }
                }
            }
        }
    }

    /// Ends the output (closes the JSON array, prints a table still held
    /// back) and flushes it.
    pub fn finish(mut self) -> io::Result<()> {
        match self.format {
            OutputFormat::Json => {
                let close: &[u8] = if self.rows == 0 { b"[]" } else { b"\n]" };
                match &self.head {
                    Some(head) if self.rows == 0 => {
                        self.out.write_all(head.as_bytes())?;
                        self.out.write_all(close)?;
                        self.out.write_all(b"\n}\n")?;
                    }
                    Some(_) => {
                        self.out.write_all(close)?;
                        self.out.write_all(b"\n}\n")?;
                    }
                    None => {
                        self.out.write_all(close)?;
                        self.out.write_all(b"\n")?;
                    }
                }
            }
            OutputFormat::Csv if self.rows == 0 => {
                write_csv_row(&mut self.out, self.columns.iter().cloned())?
            }
            OutputFormat::Markdown if self.rows == 0 => self.markdown_header()?,
            OutputFormat::Table | OutputFormat::Wide | OutputFormat::Html
                if self.widths.is_none() =>
            {
                self.flush_window()?
            }
            _ => {}
        }
        self.out.flush()
    }

    fn markdown_header(&mut self) -> io::Result<()> {
        let header: Vec<String> = self.columns.iter().map(|c| markdown(c)).collect();
        writeln!(self.out, "| {} |", header.join(" | "))?;
        writeln!(self.out, "|{}", "---|".repeat(header.len()))
    }

    fn flush_window(&mut self) -> io::Result<()> {
        let columns: Vec<&String> = match &self.shown {
            Some(shown) => shown.iter().map(|&i| &self.columns[i]).collect(),
            None => self.columns.iter().collect(),
        };
        let mut widths: Vec<usize> = columns.iter().map(|c| c.len()).collect();
        for row in &self.window {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        let header: Vec<String> = columns.iter().map(|c| c.to_uppercase()).collect();
        write_aligned(&mut self.out, &header, &widths)?;
        for row in std::mem::take(&mut self.window) {
            write_aligned(&mut self.out, &row, &widths)?;
        }
        self.widths = Some(widths);
        Ok(())
    }
}

/// One row as a JSON object, serialized without building a map.
struct RowObject<'r>(&'r [String], &'r [Value]);

impl serde::Serialize for RowObject<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (c, v) in self.0.iter().zip(self.1) {
            map.serialize_entry(c, v)?;
        }
        map.end()
    }
}

fn markdown(c: &str) -> String {
    c.replace('|', "\\|").replace('\n', " ")
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rows(n: usize) -> Vec<Vec<Value>> {
        (0..n)
            .map(|i| {
                vec![
                    json!(i),
                    json!(format!("name-{}", "x".repeat(i % 7))),
                    json!(["a", i]),
                ]
            })
            .collect()
    }

    fn render(format: OutputFormat, rows: &[Vec<Value>]) -> String {
        let mut out = Vec::new();
        let mut stream = Printer { format }.stream_to(&["n", "name", "tags"], &mut out);
        for r in rows {
            stream.push(r).unwrap();
        }
        stream.finish().unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn json_streams_the_same_document_a_whole_array_would_be() {
        for n in [0, 1, 3] {
            let rows = rows(n);
            let whole: Vec<Value> = rows
                .iter()
                .map(|r| json!({"n": r[0], "name": r[1], "tags": r[2]}))
                .collect();
            let expected = format!("{}\n", serde_json::to_string_pretty(&whole).unwrap());
            assert_eq!(render(OutputFormat::Json, &rows), expected, "{n} rows");
        }
    }

    #[test]
    fn rows_reach_the_writer_before_the_stream_ends() {
        for format in [
            OutputFormat::Json,
            OutputFormat::Csv,
            OutputFormat::Markdown,
        ] {
            let mut out = Vec::new();
            {
                let mut stream = Printer { format }.stream_to(&["n", "name", "tags"], &mut out);
                stream.push(&rows(1)[0]).unwrap();
                // Dropped without finish: what was written is all there is.
            }
            let text = String::from_utf8(out).unwrap();
            assert!(text.contains("name-"), "{format:?}: {text:?}");
        }
        // An aligned table holds back only its measuring window.
        let mut out = Vec::new();
        {
            let mut stream = Printer {
                format: OutputFormat::Table,
            }
            .stream_to(&["n", "name", "tags"], &mut out);
            for r in rows(WINDOW + 5) {
                stream.push(&r).unwrap();
            }
        }
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text.lines().count(),
            WINDOW + 1 + 5,
            "header, window, then each row"
        );
    }

    #[test]
    fn table_shows_the_narrow_columns_and_every_other_format_all_of_them() {
        let render = |format| {
            let mut out = Vec::new();
            let mut stream = Printer { format }
                .stream_to(&["n", "name", "tags"], &mut out)
                .narrow(&["tags", "n"]);
            for r in rows(2) {
                stream.push(&r).unwrap();
            }
            stream.finish().unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            render(OutputFormat::Table),
            "TAGS   N\na,0    0\na,1    1\n"
        );
        assert_eq!(
            render(OutputFormat::Wide),
            "N   NAME     TAGS\n0   name-    a,0\n1   name-x   a,1\n"
        );
        assert_eq!(
            render(OutputFormat::Csv),
            "n,name,tags\n0,name-,\"a,0\"\n1,name-x,\"a,1\"\n"
        );
        assert!(render(OutputFormat::Json).contains("\"name\": \"name-x\""));
        assert!(render(OutputFormat::Markdown).starts_with("| n | name | tags |"));
        // A whole table narrows the same way.
        let mut table = Table::new(&["n", "name", "tags"]).narrow(&["name"]);
        table.push(rows(1).remove(0));
        let mut out = Vec::new();
        Printer {
            format: OutputFormat::Table,
        }
        .table_to(&table, &mut out)
        .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "NAME\nname-\n");
    }

    #[test]
    fn tables_align_on_the_window_and_csv_quotes() {
        let text = render(OutputFormat::Table, &rows(3));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "N   NAME      TAGS");
        assert_eq!(lines[3], "2   name-xx   a,2");
        let csv = render(
            OutputFormat::Csv,
            &[vec![json!(1), json!("a,b"), json!("say \"hi\"")]],
        );
        assert_eq!(csv, "n,name,tags\n1,\"a,b\",\"say \"\"hi\"\"\"\n");
        assert_eq!(render(OutputFormat::Csv, &[]), "n,name,tags\n");
        assert_eq!(render(OutputFormat::Json, &[]), "[]\n");
        // Inside a document: the head's fields, then the rows, still one
        // JSON value whether or not there are rows.
        for n in [0, 3] {
            let mut out = Vec::new();
            let head = json!({"at": "T", "stale": [{"c": 1}]});
            let mut stream = Printer {
                format: OutputFormat::Json,
            }
            .stream_to(&["n", "name", "tags"], &mut out)
            .within(&head, "objects");
            for r in &rows(n) {
                stream.push(r).unwrap();
            }
            stream.finish().unwrap();
            let doc: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(doc["at"], "T");
            assert_eq!(doc["stale"][0]["c"], 1);
            assert_eq!(doc["objects"].as_array().unwrap().len(), n);
        }
    }
}
