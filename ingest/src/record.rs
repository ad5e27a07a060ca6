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
//! bounded by the largest record, with one exception made for the largest
//! inputs Kubernetes produces: a top-level `*List` (`kubectl get -A -o json`,
//! an API server LIST) that grows past [`STREAM_LIST_BYTES`] is cut into its
//! `items`, each framed as its own record ([`Record::item`]), so a list of
//! any size is read in constant memory.

use std::io::{self, BufRead};

/// Records larger than this are rejected rather than buffered.
pub const MAX_RECORD_BYTES: usize = 64 << 20;

/// A top-level JSON object that grows past this while inside its `items`
/// array is streamed item by item. Smaller lists are framed whole (and
/// their items decoded in one piece), which keeps the exact semantics for
/// ordinary inputs.
pub const STREAM_LIST_BYTES: usize = 8 << 20;

/// One framed record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// 1-based line where the record starts.
    pub line: u64,
    /// The record's bytes.
    pub bytes: Vec<u8>,
    /// Set when the record is one item of a streamed `*List`.
    pub item: Option<ListItem>,
}

impl Record {
    /// A whole record.
    pub fn new(line: u64, bytes: Vec<u8>) -> Record {
        Record {
            line,
            bytes,
            item: None,
        }
    }
}

/// Where a streamed item came from: its position and what the list said
/// about its items (typed lists such as `PodList` omit each item's `kind`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListItem {
    /// The array it was in: `items`, or a cloud log export's `records`
    /// (Azure Event Hub batches) or `events` (`aws logs filter-log-events`).
    pub key: &'static str,
    /// Index in that array.
    pub index: usize,
    /// Item kind, from the list's kind (`PodList` → `Pod`), when the list
    /// named it before its items.
    pub kind: Option<String>,
    /// The list's `apiVersion`, when it came before its items.
    pub api_version: Option<String>,
}

impl ListItem {
    /// Item `index` of `list`, with what the list's `kind` and `apiVersion`
    /// say about its items.
    pub fn of_list(list: &serde_json::Value, index: usize) -> ListItem {
        let text = |key: &str| list.get(key).and_then(|v| v.as_str());
        let kind = text("kind")
            .and_then(|k| k.strip_suffix("List"))
            .filter(|k| !k.is_empty())
            .map(str::to_string);
        // A typed list serialized with the generic `v1` (or no
        // apiVersion) still says whose items it holds by its kind.
        let api_version = match (text("apiVersion"), kind.as_deref().and_then(gitops_group)) {
            (None | Some("v1"), Some(group)) => Some(group.to_string()),
            (given, _) => given.map(str::to_string),
        };
        ListItem {
            key: "items",
            index,
            kind,
            api_version,
        }
    }

    /// Gives `item` the list's item kind and apiVersion where it has none.
    pub fn fill(&self, item: &mut serde_json::Value) {
        let Some(map) = item.as_object_mut() else {
            return;
        };
        for (key, value) in [("kind", &self.kind), ("apiVersion", &self.api_version)] {
            if let (false, Some(v)) = (map.contains_key(key), value) {
                map.insert(key.to_string(), v.clone().into());
            }
        }
    }
}

/// The group/version of a GitOps tool's kind, for typed lists written
/// with the generic `v1`: `KustomizationList` holds Flux Kustomizations
/// whatever its apiVersion says.
fn gitops_group(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "Kustomization" => "kustomize.toolkit.fluxcd.io/v1",
        "HelmRelease" => "helm.toolkit.fluxcd.io/v2",
        "GitRepository" | "HelmRepository" | "HelmChart" | "Bucket" => {
            "source.toolkit.fluxcd.io/v1"
        }
        "OCIRepository" => "source.toolkit.fluxcd.io/v1beta2",
        "Application" | "AppProject" | "ApplicationSet" => "argoproj.io/v1alpha1",
        "BundleDeployment" | "Bundle" | "GitRepo" => "fleet.cattle.io/v1alpha1",
        _ => return None,
    })
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
    stream_threshold: usize,
    /// Records framed out of one over-long JSON line.
    pending: std::collections::VecDeque<Framed>,
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
        Self::with_list_threshold(input, STREAM_LIST_BYTES)
    }

    /// Frames `input`, streaming top-level lists past `threshold` bytes
    /// (tests use small thresholds).
    pub fn with_list_threshold(input: R, threshold: usize) -> Self {
        RecordReader {
            input,
            mode: Mode::Undecided,
            line: 0,
            scanner: Scanner::streaming(threshold),
            done: false,
            stream_threshold: threshold,
            pending: std::collections::VecDeque::new(),
        }
    }

    /// A JSON Lines line too long to frame whole (a single-line API
    /// response): framed by a streaming scanner of its own.
    fn frame_long_line(&mut self, line_no: u64, line: &[u8]) -> Option<Framed> {
        let mut scanner = Scanner::streaming(self.stream_threshold);
        scanner.feed(line_no, line);
        while let Some(out) = scanner.take_ready() {
            self.pending.push_back(out);
        }
        if let Some(out) = scanner.finish() {
            self.pending.push_back(out);
            while let Some(out) = scanner.take_ready() {
                self.pending.push_back(out);
            }
        }
        self.pending.pop_front()
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
            if let Some(out) = self.pending.pop_front() {
                return Ok(Some(out));
            }
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
                Mode::Lines if line.len() > self.stream_threshold => {
                    if let Some(out) = self.frame_long_line(self.line, &line) {
                        return Ok(Some(out));
                    }
                }
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
                        let out = if line.len() > self.stream_threshold {
                            self.frame_long_line(self.line, &line)
                        } else {
                            frame_line(self.line, line)
                        };
                        if let Some(out) = out {
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

/// `bytes` framed without a reader when they are one complete-looking line
/// of JSON: an object on a single line (a Kafka message or an HTTP body
/// holding one envelope). `None` leaves them to [`RecordReader`].
///
/// Why: a reader asks of a first line starting with `{` whether it opens a
/// multi-line value, which parses it once more, and copies every line:
/// together 16% of the Kafka consumer's decoding thread, paid again for
/// every message. A line that ends in `}` is framed as the reader would
/// frame it when the line is complete; the rare one that only looks
/// complete (`{"a":{"b":1}`) is rejected by the decoder as truncated JSON
/// instead of by the framer.
pub fn single_line(bytes: &[u8], stream_threshold: usize) -> Option<Framed> {
    let line = bytes.trim_ascii_end();
    let one_object = line.first() == Some(&b'{') && line.last() == Some(&b'}');
    if !one_object || line.len() > stream_threshold || line.contains(&b'\n') {
        return None;
    }
    Some(framed(1, line.to_vec()))
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
        Framed::Record(Record::new(line, bytes))
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
    /// Streams the items of a large top-level list (see [`ListTracker`]).
    list: ListTracker,
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

/// The top-level arrays streamed past the threshold: a `*List`'s `items`,
/// and the arrays the clouds' log exports of any size put their records in
/// (`records`: an Azure Event Hub batch; `events`: `aws logs
/// filter-log-events`, which prints every page as one document).
const STREAMED_ARRAYS: [&str; 3] = ["items", "records", "events"];

/// Follows a top-level object's `items` array: where each element starts
/// and ends, so that a list past the threshold can be cut into its items
/// (including those already buffered) and the rest streamed.
#[derive(Default)]
struct ListTracker {
    /// 0 disables streaming.
    threshold: usize,
    /// Where the current depth-1 string (a key, maybe) starts in `buf`.
    key_start: usize,
    /// The last depth-1 key was one of [`STREAMED_ARRAYS`] (and `:`
    /// followed it).
    items_key: bool,
    /// Which one.
    key: &'static str,
    items_colon: bool,
    /// Inside the `items` array of the top-level object.
    in_items: bool,
    /// `buf` offset just after the `[` of `items`.
    items_start: usize,
    /// Start (offset, line) of the element being read.
    element: Option<(usize, u64)>,
    /// Completed elements not yet emitted (offset range, line).
    done: Vec<(usize, usize, u64)>,
    /// Items are being emitted as they complete.
    streaming: bool,
    /// The list's bytes up to and including `[` (to check it and read its kind).
    head: Vec<u8>,
    /// Items emitted so far.
    emitted: usize,
    kind: Option<String>,
    api_version: Option<String>,
}

impl Scanner {
    fn streaming(threshold: usize) -> Scanner {
        Scanner {
            list: ListTracker {
                threshold,
                ..ListTracker::default()
            },
            ..Scanner::default()
        }
    }

    fn take_ready(&mut self) -> Option<Framed> {
        self.ready.pop_front()
    }

    /// Tracks the top-level object's `items` array, byte by byte, before
    /// the byte is framed. Only for a single top-level value (not inside a
    /// top-level array) and only when streaming is enabled.
    fn track(&mut self, line_no: u64, b: u8) {
        let t = &mut self.list;
        if t.threshold == 0 || self.array {
            return;
        }
        if self.in_string {
            if self.depth == 1 && !self.escaped && b == b'"' && !t.in_items {
                // A depth-1 string ends here: a key if a ':' follows.
                let key = &self.buf[t.key_start + 1..];
                match STREAMED_ARRAYS.iter().find(|k| k.as_bytes() == key) {
                    Some(k) => {
                        t.items_key = true;
                        t.key = k;
                    }
                    None => t.items_key = false,
                }
            }
            return;
        }
        match (self.depth, b) {
            (1, b'"') if !t.in_items => {
                t.key_start = self.buf.len();
                t.items_key = false;
                t.items_colon = false;
            }
            (1, b':') if t.items_key => t.items_colon = true,
            (1, b'[') if t.items_colon => {
                t.in_items = true;
                t.items_start = self.buf.len() + 1;
                t.element = None;
                t.done.clear();
            }
            (1, c) if !c.is_ascii_whitespace() => {
                t.items_key = false;
                t.items_colon = false;
            }
            (2, b',') | (2, b']') if t.in_items => {
                if let Some((start, line)) = t.element.take() {
                    let end = self.buf.len();
                    t.done.push((start, end, line));
                }
                if b == b']' {
                    t.in_items = false;
                }
            }
            (2, c) if t.in_items && !c.is_ascii_whitespace() && t.element.is_none() => {
                t.element = Some((self.buf.len(), line_no));
            }
            _ => {}
        }
    }

    /// After a byte is framed: emits finished items when streaming, and
    /// starts streaming when the buffered list passes the threshold.
    fn flush_items(&mut self) {
        if self.list.threshold == 0 || self.array {
            return;
        }
        if !self.list.streaming {
            if !(self.list.in_items && self.buf.len() > self.list.threshold) {
                return;
            }
            // Switch: keep the head, emit what is complete, keep the rest.
            let t = &mut self.list;
            t.streaming = true;
            t.head = self.buf[..t.items_start].to_vec();
            let mut shell = t.head.clone();
            shell.extend_from_slice(b"]}");
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&shell) {
                let context = ListItem::of_list(&v, 0);
                (t.kind, t.api_version) = (context.kind, context.api_version);
            }
        }
        let done = std::mem::take(&mut self.list.done);
        for (start, end, line) in &done {
            let bytes = self.buf[*start..*end].trim_ascii().to_vec();
            let item = ListItem {
                key: self.list.key,
                index: self.list.emitted,
                kind: self.list.kind.clone(),
                api_version: self.list.api_version.clone(),
            };
            self.list.emitted += 1;
            self.ready.push_back(match framed(*line, bytes) {
                Framed::Record(mut r) => {
                    r.item = Some(item);
                    Framed::Record(r)
                }
                broken => broken,
            });
        }
        // Drop what was emitted: while inside `items`, everything before
        // the element in progress; after the closing `]`, up to the end of
        // the last item (the `]` and the rest are the list's tail).
        let keep_from = if self.list.in_items {
            match self.list.element {
                Some((start, line)) => {
                    self.list.element = Some((0, line));
                    start
                }
                None => self.buf.len(),
            }
        } else {
            done.last().map_or(0, |(_, end, _)| *end)
        };
        if !done.is_empty() || keep_from > 0 {
            self.buf.drain(..keep_from);
        }
    }

    /// The end of a streamed list: its head and tail (the list without its
    /// items) must still be well-formed JSON.
    fn end_streamed_list(&mut self, line_no: u64) {
        let mut shell = std::mem::take(&mut self.list.head);
        shell.extend_from_slice(&self.buf);
        self.buf.clear();
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&shell) {
            self.ready.push_back(Framed::Broken {
                line: line_no,
                reason: format!("the list around the streamed items is not valid JSON: {e}"),
                raw: shell.into_iter().take(4096).collect(),
            });
        }
        let threshold = self.list.threshold;
        self.list = ListTracker {
            threshold,
            ..ListTracker::default()
        };
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
        let threshold = self.list.threshold;
        self.list = ListTracker {
            threshold,
            ..ListTracker::default()
        };
        let raw = std::mem::take(&mut self.buf);
        self.ready.push_back(Framed::Broken {
            line,
            reason: reason.into(),
            raw,
        });
    }

    fn byte(&mut self, line_no: u64, b: u8) {
        self.track(line_no, b);
        self.frame_byte(line_no, b);
        if self.list.threshold > 0 && (self.list.in_items || self.list.streaming) {
            self.flush_items();
        }
    }

    fn frame_byte(&mut self, line_no: u64, b: u8) {
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
                    if self.list.streaming {
                        self.end_streamed_list(line_no);
                    } else {
                        self.emit();
                        self.list.in_items = false;
                        self.list.done.clear();
                    }
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
    use proptest::prelude::*;

    use super::*;

    fn frame(input: &str) -> Vec<Framed> {
        RecordReader::new(input.as_bytes())
            .map(Result::unwrap)
            .collect()
    }

    fn rec(line: u64, s: &str) -> Framed {
        Framed::Record(Record::new(line, s.as_bytes().to_vec()))
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

    proptest! {
        /// A message framed without a reader frames as the reader frames
        /// it, whenever it is valid JSON; when it only looks complete, it
        /// is still one record, and one the decoder rejects.
        #[test]
        fn a_single_line_frames_as_the_reader_frames_it(
            body in prop_oneof![
                prop::collection::btree_map("[a-z\"\\\\{}]{0,6}", "[a-z0-9 {}\\[\\]]{0,8}", 0..4)
                    .prop_map(|m| serde_json::to_string(&m).unwrap_or_default()),
                "\\{[a-z0-9\"\\\\:,{}\\[\\] \n]{0,24}",
            ],
            tail in "[ \r\n]{0,3}",
        ) {
            let bytes = format!("{body}{tail}");
            let Some(one) = single_line(bytes.as_bytes(), STREAM_LIST_BYTES) else {
                let line = bytes.trim_end();
                prop_assert!(line.contains('\n') || !line.ends_with('}'), "{bytes:?} looks like one line");
                return Ok(());
            };
            let Framed::Record(record) = &one else {
                return Err(TestCaseError::fail("a short line is a record"));
            };
            if serde_json::from_slice::<serde::de::IgnoredAny>(&record.bytes).is_ok() {
                prop_assert_eq!(vec![one.clone()], frame(&bytes));
            } else {
                prop_assert!(serde_json::from_slice::<serde_json::Value>(&record.bytes).is_err());
            }
        }
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

#[cfg(test)]
mod list_streaming {
    use proptest::prelude::*;
    use serde_json::{json, Value};

    use super::*;

    fn frame(input: &str, threshold: usize) -> Vec<Framed> {
        RecordReader::with_list_threshold(input.as_bytes(), threshold)
            .map(Result::unwrap)
            .collect()
    }

    fn records(framed: &[Framed]) -> Vec<&Record> {
        framed
            .iter()
            .map(|f| match f {
                Framed::Record(r) => r,
                Framed::Broken { reason, .. } => panic!("broken: {reason}"),
            })
            .collect()
    }

    #[test]
    fn a_large_typed_list_is_cut_into_items_with_their_lines_and_kind() {
        let text = "{\n  \"kind\": \"ConfigMapList\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"items\": [\n    {\"metadata\": {\"name\": \"a\"}},\n    {\"metadata\": {\"name\": \"b, ]\"}}\n  ,\n    {\"metadata\": {\"name\": \"c\"}}\n  ]\n}\n";
        let framed = frame(text, 16);
        let recs = records(&framed);
        assert_eq!(recs.len(), 3);
        let names: Vec<Value> = recs
            .iter()
            .map(|r| serde_json::from_slice::<Value>(&r.bytes).unwrap()["metadata"]["name"].clone())
            .collect();
        assert_eq!(names, [json!("a"), json!("b, ]"), json!("c")]);
        assert_eq!(recs.iter().map(|r| r.line).collect::<Vec<_>>(), [6, 7, 9]);
        let item = recs[1].item.as_ref().unwrap();
        assert_eq!(
            (
                item.index,
                item.kind.as_deref(),
                item.api_version.as_deref()
            ),
            (1, Some("ConfigMap"), Some("v1"))
        );
    }

    #[test]
    fn kubectl_order_puts_the_kind_after_the_items_and_small_lists_stay_whole() {
        let text = "{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n        {\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}}\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {\"resourceVersion\": \"\"}\n}\n";
        let recs_framed = frame(text, 8);
        let recs = records(&recs_framed);
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].item.as_ref().unwrap().kind, None);
        let whole = frame(text, STREAM_LIST_BYTES);
        let whole = records(&whole);
        assert_eq!(whole.len(), 1);
        assert_eq!(whole[0].item, None);
        assert_eq!(whole[0].bytes, text.trim_end().as_bytes());
    }

    #[test]
    fn a_single_line_list_is_streamed_too_and_a_broken_tail_is_reported() {
        let line = r#"{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"x"}},{"metadata":{"name":"y"}}],"metadata":{}}"#;
        let text = format!("{line}\n{line}\n");
        let framed = frame(&text, 32);
        let recs = records(&framed);
        assert_eq!(
            recs.iter().map(|r| r.line).collect::<Vec<_>>(),
            [1, 1, 2, 2]
        );
        let broken = r#"{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"x"}},{"metadata":{"name":"y"}}],"metadata":{},,}"#;
        let framed = frame(&format!("{broken}\n"), 32);
        assert!(
            matches!(framed.last(), Some(Framed::Broken { reason, .. }) if reason.contains("not valid JSON")),
            "{framed:?}"
        );
    }

    proptest! {
        /// Whatever the threshold, the items come out exactly, in order:
        /// streaming changes how a list is framed, never what it holds.
        #[test]
        fn streamed_items_equal_the_list(
            names in proptest::collection::vec("[a-z\\[\\]{},\"\\\\]{0,12}", 0..30),
            threshold in 1usize..400,
            pretty in any::<bool>(),
        ) {
            let items: Vec<Value> = names.iter().map(|n| json!({"metadata": {"name": n}, "data": {"k": [1, {"x": n}]}})).collect();
            let list = json!({"kind": "ConfigMapList", "apiVersion": "v1", "items": items, "metadata": {}});
            let text = if pretty { serde_json::to_string_pretty(&list).unwrap() } else { serde_json::to_string(&list).unwrap() };
            // Pretty output starts a multi-line value; compact output is one JSON line.
            let framed = frame(&format!("{text}\n"), threshold);
            let mut got = Vec::new();
            for f in &framed {
                match f {
                    Framed::Record(r) if r.item.is_some() => got.push(serde_json::from_slice::<Value>(&r.bytes).unwrap()),
                    Framed::Record(r) => {
                        let v: Value = serde_json::from_slice(&r.bytes).unwrap();
                        got.extend(v["items"].as_array().unwrap().iter().cloned());
                    }
                    Framed::Broken { reason, .. } => prop_assert!(false, "broken: {}", reason),
                }
            }
            prop_assert_eq!(got, items);
        }
    }
}
