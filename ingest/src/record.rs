//! Framing: cutting a byte stream into JSON records, each with its line.
//!
//! Three layouts are accepted, detected from the content:
//! - JSON Lines: one record per line (blank lines skipped);
//! - a JSON array: each element is a record;
//! - concatenated JSON values (e.g. one pretty-printed object), chosen when
//!   the first line is an incomplete JSON value.
//!
//! Framing never parses the records; it only tracks strings and nesting, so
//! a broken record costs one rejection, not the rest of the file. Memory is
//! bounded by the largest record.

use std::io::{self, BufRead};

/// Records larger than this are rejected rather than buffered.
pub const MAX_RECORD_BYTES: usize = 64 << 20;

/// One framed record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// 1-based line where the record starts.
    pub line: u64,
    /// The record's bytes.
    pub bytes: Vec<u8>,
}

/// What framing yields: a record, or bytes that cannot be one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Framed {
    /// A complete record (not yet parsed).
    Record(Record),
    /// Bytes that do not frame as a record (unterminated, trailing comma...).
    Broken {
        /// 1-based line where the problem starts.
        line: u64,
        /// What is wrong.
        reason: String,
        /// The bytes concerned.
        raw: Vec<u8>,
    },
}

/// Frames records out of a reader.
pub struct RecordReader<R> {
    input: R,
    mode: Mode,
    /// Lines consumed so far.
    line: u64,
    scanner: Scanner,
    done: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Undecided,
    Lines,
    Values,
    Array,
}

impl<R: BufRead> RecordReader<R> {
    /// Frames `input`.
    pub fn new(input: R) -> Self {
        RecordReader {
            input,
            mode: Mode::Undecided,
            line: 0,
            scanner: Scanner::default(),
            done: false,
        }
    }

    fn next_line(&mut self) -> io::Result<Option<Vec<u8>>> {
        let mut buf = Vec::new();
        let n = self.input.read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        Ok(Some(buf))
    }

    fn next_framed(&mut self) -> io::Result<Option<Framed>> {
        loop {
            if let Some(out) = self.scanner.take_ready() {
                return Ok(Some(out));
            }
            if self.done {
                return Ok(None);
            }
            let Some(mut line) = self.next_line()? else {
                self.done = true;
                if let Some(out) = self.scanner.finish() {
                    return Ok(Some(out));
                }
                continue;
            };
            if self.line == 1 && line.starts_with(b"\xEF\xBB\xBF") {
                line.drain(..3);
            }
            match self.mode {
                Mode::Lines => {
                    if let Some(out) = frame_line(self.line, line) {
                        return Ok(Some(out));
                    }
                }
                Mode::Values | Mode::Array => self.scanner.feed(self.line, &line),
                Mode::Undecided => {
                    let trimmed = line.trim_ascii_start();
                    if trimmed.is_empty() {
                        continue;
                    }
                    if trimmed.starts_with(b"[") {
                        self.mode = Mode::Array;
                        self.scanner.array = true;
                        let skip = line.len() - trimmed.len() + 1;
                        self.scanner.awaiting_open = false;
                        self.scanner.feed(self.line, &line[skip..]);
                    } else if is_incomplete_json(&line) {
                        self.mode = Mode::Values;
                        self.scanner.feed(self.line, &line);
                    } else {
                        self.mode = Mode::Lines;
                        if let Some(out) = frame_line(self.line, line) {
                            return Ok(Some(out));
                        }
                    }
                }
            }
        }
    }
}

impl<R: BufRead> Iterator for RecordReader<R> {
    type Item = io::Result<Framed>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_framed().transpose()
    }
}

fn frame_line(line_no: u64, mut line: Vec<u8>) -> Option<Framed> {
    while line.last().is_some_and(|b| b.is_ascii_whitespace()) {
        line.pop();
    }
    if line.trim_ascii_start().is_empty() {
        return None;
    }
    Some(framed(line_no, line))
}

/// A complete record, or a rejection when it is over the size limit (only
/// its start is kept: enough to recognise it in the quarantine).
fn framed(line: u64, bytes: Vec<u8>) -> Framed {
    if bytes.len() > MAX_RECORD_BYTES {
        Framed::Broken {
            line,
            reason: format!("record is larger than {MAX_RECORD_BYTES} bytes"),
            raw: bytes[..1024].to_vec(),
        }
    } else {
        Framed::Record(Record { line, bytes })
    }
}

/// A first line that is the start of a multi-line JSON value.
fn is_incomplete_json(line: &[u8]) -> bool {
    let trimmed = line.trim_ascii();
    trimmed.starts_with(b"{")
        && serde_json::from_slice::<serde::de::IgnoredAny>(trimmed).is_err_and(|e| e.is_eof())
}

/// Tracks strings and nesting to find where each value ends.
#[derive(Default)]
struct Scanner {
    /// Inside a top-level array: elements are records, commas separate.
    array: bool,
    awaiting_open: bool,
    closed: bool,
    depth: usize,
    in_string: bool,
    escaped: bool,
    after_comma: bool,
    start_line: u64,
    buf: Vec<u8>,
    ready: std::collections::VecDeque<Framed>,
}

impl Scanner {
    fn take_ready(&mut self) -> Option<Framed> {
        self.ready.pop_front()
    }

    fn feed(&mut self, line_no: u64, bytes: &[u8]) {
        for &b in bytes {
            self.byte(line_no, b);
        }
    }

    fn begin(&mut self, line_no: u64) {
        if self.buf.is_empty() {
            self.start_line = line_no;
        }
    }

    fn emit(&mut self) {
        let bytes = std::mem::take(&mut self.buf);
        self.ready.push_back(framed(self.start_line, bytes));
    }

    fn broken(&mut self, line: u64, reason: impl Into<String>) {
        let raw = std::mem::take(&mut self.buf);
        self.ready.push_back(Framed::Broken {
            line,
            reason: reason.into(),
            raw,
        });
    }

    fn byte(&mut self, line_no: u64, b: u8) {
        if self.in_string {
            self.buf.push(b);
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
            }
            return;
        }
        if self.closed {
            // Anything after the array's closing bracket is kept and reported
            // at the end, never silently dropped.
            if !b.is_ascii_whitespace() || !self.buf.is_empty() {
                self.begin(line_no);
                self.buf.push(b);
            }
            return;
        }
        match b {
            b'"' => {
                self.begin(line_no);
                self.buf.push(b);
                self.in_string = true;
            }
            b'{' | b'[' => {
                self.begin(line_no);
                self.depth += 1;
                self.buf.push(b);
            }
            b'}' | b']' if self.depth > 0 => {
                self.depth -= 1;
                self.buf.push(b);
                if self.depth == 0 && !self.array {
                    self.emit();
                }
            }
            b']' if self.array => {
                if !self.buf.is_empty() {
                    self.emit();
                } else if self.after_comma {
                    self.broken(line_no, "trailing comma before ']'");
                }
                self.closed = true;
            }
            b'}' | b']' => {
                self.begin(line_no);
                self.buf.push(b);
                self.broken(line_no, format!("unexpected '{}'", b as char));
            }
            b',' if self.depth == 0 && self.array => {
                if self.buf.is_empty() {
                    self.broken(line_no, "empty array element (extra comma)");
                } else {
                    self.emit();
                }
                self.after_comma = true;
                return;
            }
            _ if b.is_ascii_whitespace() && self.depth == 0 => {
                if !self.array && !self.buf.is_empty() {
                    self.emit();
                }
                return;
            }
            _ => {
                self.begin(line_no);
                self.buf.push(b);
            }
        }
        self.after_comma = false;
    }

    fn finish(&mut self) -> Option<Framed> {
        if self.closed && !self.buf.is_empty() {
            let line = self.start_line;
            self.broken(line, "unexpected data after the closing ']'");
        } else if self.array && !self.closed {
            let line = self.start_line;
            self.broken(line.max(1), "unterminated JSON array (missing ']')");
        } else if self.in_string || self.depth > 0 {
            let line = self.start_line;
            self.broken(line, "unterminated JSON value at end of input");
        } else if !self.buf.is_empty() {
            self.emit();
        }
        self.take_ready()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(input: &str) -> Vec<Framed> {
        RecordReader::new(input.as_bytes())
            .map(Result::unwrap)
            .collect()
    }

    fn rec(line: u64, s: &str) -> Framed {
        Framed::Record(Record {
            line,
            bytes: s.as_bytes().to_vec(),
        })
    }

    #[test]
    fn json_lines_keep_line_numbers_and_skip_blanks() {
        let got = frame("{\"a\":1}\n\n{\"b\":2}\r\nbroken\n");
        assert_eq!(
            got,
            vec![rec(1, "{\"a\":1}"), rec(3, "{\"b\":2}"), rec(4, "broken")]
        );
    }

    #[test]
    fn arrays_yield_elements_with_their_start_lines() {
        let got = frame("[\n  {\"a\": \"x]\"},\n  {\"b\": [1,\n 2]}\n]\n");
        assert_eq!(
            got,
            vec![rec(2, "{\"a\": \"x]\"}"), rec(3, "{\"b\": [1,\n 2]}")]
        );
    }

    #[test]
    fn pretty_printed_values_are_framed_whole() {
        let got = frame("{\n \"a\": {\"b\": \"}\"}\n}\n{\"c\":1}\n");
        assert_eq!(
            got,
            vec![rec(1, "{\n \"a\": {\"b\": \"}\"}\n}"), rec(4, "{\"c\":1}")]
        );
    }

    #[test]
    fn broken_arrays_are_reported_not_swallowed() {
        let got = frame("[{\"a\":1},\n{\"b\":2},\n]");
        assert_eq!(got[0], rec(1, "{\"a\":1}"));
        assert_eq!(got[1], rec(2, "{\"b\":2}"));
        assert!(
            matches!(&got[2], Framed::Broken { line: 3, reason, .. } if reason.contains("trailing comma"))
        );

        let got = frame("[{\"a\":1},\n{\"b\":");
        assert!(
            matches!(&got[1], Framed::Broken { line: 2, reason, .. } if reason.contains("unterminated"))
        );
    }
}

#[cfg(test)]
mod robustness {
    use proptest::prelude::*;

    use super::*;
    use crate::Format;

    fn valid(i: usize) -> String {
        format!(
            r#"{{"schema":"annal.event/v1","id":"v{i}","type":"controlplane.fenced","time":"2026-11-01T10:00:00Z","data":{{"controller":"c{i}"}}}}"#
        )
    }

    fn decode(
        format: Format,
        record: &Record,
    ) -> Result<Vec<annal_schemas::Envelope>, crate::formats::DecodeError> {
        let mut ctx = crate::formats::Context::new("-", annal_schemas::Timestamp::now());
        ctx.cluster = Some("c");
        let mut out = crate::formats::Output::default();
        format.decode(record, crate::document::Syntax::Json, &ctx, &mut out)?;
        Ok(out.events)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Arbitrary bytes never panic the framer or the decoder.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            for framed in RecordReader::new(&bytes[..]) {
                if let Framed::Record(r) = framed.unwrap() {
                    let _ = decode(Format::Envelope, &r);
                    let _ = decode(Format::Auto, &r);
                }
            }
        }

        /// Garbage lines between valid JSONL records cost only themselves:
        /// every valid record is still framed and decoded, on its own line.
        #[test]
        fn garbage_lines_do_not_hide_valid_records(
            garbage in proptest::collection::vec("[^\n]{0,40}", 1..20),
        ) {
            let mut text = String::new();
            let mut expected = Vec::new();
            let mut line = 0u64;
            for (i, g) in garbage.iter().enumerate() {
                // The first line is valid so the input is read as JSON Lines.
                text.push_str(&valid(i));
                text.push('\n');
                line += 1;
                expected.push((line, format!("v{i}")));
                text.push_str(g);
                text.push('\n');
                line += 1;
            }
            let mut found = Vec::new();
            for framed in RecordReader::new(text.as_bytes()) {
                if let Framed::Record(r) = framed.unwrap() {
                    if let Ok(events) = decode(Format::Envelope, &r) {
                        for e in events {
                            if e.id.starts_with('v') && e.data["controller"].is_string() {
                                found.push((r.line, e.id));
                            }
                        }
                    }
                }
            }
            let found: Vec<_> = found.into_iter().filter(|(l, _)| l % 2 == 1).collect();
            prop_assert_eq!(found, expected);
        }
    }
}
