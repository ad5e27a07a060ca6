//! Framing YAML streams: one record per document, with its first line.
//!
//! Documents are cut at `---` and `...` marker lines without parsing, so a
//! broken document costs one rejection and the rest of a multi-document
//! file (a `kubectl get -o yaml` dump, a Helm manifest) still ingests. Each
//! record keeps its `---` line, so parser error lines map back to the file.
//!
//! As for JSON, a document that grows past [`crate::STREAM_LIST_BYTES`] inside a
//! top-level `items:` sequence (`kubectl get -A -o yaml`) is cut into its
//! items, each framed (de-indented) as its own record, so a list of any size
//! is read in constant memory.

use std::collections::VecDeque;
use std::io::{self, BufRead};

use crate::record::{Framed, ListItem, Record, MAX_RECORD_BYTES};

/// Frames YAML documents out of a reader.
pub struct YamlReader<R> {
    input: R,
    line: u64,
    doc: Vec<u8>,
    doc_start: u64,
    has_content: bool,
    done: bool,
    list: YamlList,
    ready: VecDeque<Framed>,
}

/// Follows a document's top-level `items:` sequence.
#[derive(Default)]
struct YamlList {
    threshold: usize,
    /// Inside the `items:` block.
    in_items: bool,
    /// Columns before `- ` of the items (0 for kubectl's style).
    indent: Option<usize>,
    /// `doc` offset where `items:` ends (the head is everything before).
    head_end: usize,
    /// Item starts (doc offset, line), buffered while not streaming.
    starts: Vec<(usize, u64)>,
    streaming: bool,
    head: Vec<u8>,
    /// The item being read, when streaming.
    item: Vec<u8>,
    item_line: u64,
    /// Lines after the items block, when streaming.
    tail: Vec<u8>,
    emitted: usize,
    kind: Option<String>,
    api_version: Option<String>,
}

impl<R: BufRead> YamlReader<R> {
    /// Frames `input`, streaming lists past `threshold` bytes.
    pub fn with_list_threshold(input: R, threshold: usize) -> Self {
        YamlReader {
            input,
            line: 0,
            doc: Vec::new(),
            doc_start: 1,
            has_content: false,
            done: false,
            list: YamlList {
                threshold,
                ..YamlList::default()
            },
            ready: VecDeque::new(),
        }
    }

    /// Ends the current document; queues it when it holds anything but
    /// blank lines and comments (or, for a streamed list, checks the rest).
    fn cut(&mut self, next_start: u64) {
        let doc = std::mem::take(&mut self.doc);
        let start = std::mem::replace(&mut self.doc_start, next_start);
        let had = std::mem::replace(&mut self.has_content, false);
        let threshold = self.list.threshold;
        let list = std::mem::replace(
            &mut self.list,
            YamlList {
                threshold,
                ..YamlList::default()
            },
        );
        if list.streaming {
            self.finish_streamed(list, start);
            return;
        }
        if !had {
            return;
        }
        self.ready.push_back(if doc.len() > MAX_RECORD_BYTES {
            Framed::Broken {
                line: start,
                reason: format!("YAML document is larger than {MAX_RECORD_BYTES} bytes"),
                raw: doc[..1024].to_vec(),
            }
        } else {
            Framed::Record(Record::new(start, doc))
        });
    }

    fn finish_streamed(&mut self, mut list: YamlList, start: u64) {
        if !list.item.is_empty() {
            let item = std::mem::take(&mut list.item);
            let line = list.item_line;
            self.push_item(&mut list, item, line);
        }
        let mut shell = std::mem::take(&mut list.head);
        shell.extend_from_slice(b" []\n");
        shell.extend_from_slice(&list.tail);
        if let Err(e) = serde_norway::from_slice::<serde::de::IgnoredAny>(&shell) {
            self.ready.push_back(Framed::Broken {
                line: start,
                reason: format!("the list around the streamed items is not valid YAML: {e}"),
                raw: shell.into_iter().take(4096).collect(),
            });
        }
    }

    fn push_item(&mut self, list: &mut YamlList, item: Vec<u8>, line: u64) {
        push_item(&mut self.ready, list, item, line);
    }
}

/// Queues one streamed item as a record of its own (blank lines and
/// comments between items are not items).
fn push_item(ready: &mut VecDeque<Framed>, list: &mut YamlList, item: Vec<u8>, line: u64) {
    let content = item.split(|b| *b == b'\n').any(|l| {
        let t = l.trim_ascii();
        !t.is_empty() && !t.starts_with(b"#")
    });
    if !content {
        return;
    }
    let line = line.max(1);
    {
        let indent = list.indent.unwrap_or(0);
        let bytes = dedent_item(&item, indent);
        let meta = ListItem {
            key: "items",
            index: list.emitted,
            kind: list.kind.clone(),
            api_version: list.api_version.clone(),
        };
        list.emitted += 1;
        ready.push_back(if bytes.len() > MAX_RECORD_BYTES {
            Framed::Broken {
                line,
                reason: format!("list item is larger than {MAX_RECORD_BYTES} bytes"),
                raw: bytes[..1024].to_vec(),
            }
        } else {
            let mut r = Record::new(line, bytes);
            r.item = Some(meta);
            Framed::Record(r)
        });
    }
}

impl<R: BufRead> YamlReader<R> {
    /// A content line of the current document.
    fn content_line(&mut self, line: Vec<u8>) {
        let t = line.trim_ascii();
        if !t.is_empty() && !t.starts_with(b"#") && !t.starts_with(b"%") {
            self.has_content = true;
        }
        if self.list.threshold == 0 {
            if self.doc.len() <= MAX_RECORD_BYTES {
                self.doc.extend_from_slice(&line);
            }
            return;
        }
        let role = self.list.classify(&line);
        if self.list.streaming {
            match role {
                Role::ItemStart => {
                    let item = std::mem::take(&mut self.list.item);
                    if !item.is_empty() {
                        let at = self.list.item_line;
                        push_item(&mut self.ready, &mut self.list, item, at);
                    }
                    self.list.item = line;
                    self.list.item_line = self.line;
                }
                Role::InItems => {
                    if self.list.item.is_empty() {
                        self.list.item_line = self.line;
                    }
                    self.list.item.extend_from_slice(&line)
                }
                Role::Other => {
                    if self.list.in_items {
                        self.list.in_items = false;
                        let item = std::mem::take(&mut self.list.item);
                        if !item.is_empty() {
                            let at = self.list.item_line;
                            push_item(&mut self.ready, &mut self.list, item, at);
                        }
                    }
                    self.list.tail.extend_from_slice(&line);
                }
            }
            return;
        }
        match role {
            Role::ItemStart => self.list.starts.push((self.doc.len(), self.line)),
            Role::Other if self.list.in_items => self.list.in_items = false,
            _ => {}
        }
        if self.doc.len() <= MAX_RECORD_BYTES {
            self.doc.extend_from_slice(&line);
        }
        if is_items_key(&line) && !self.list.in_items && self.list.starts.is_empty() {
            self.list.in_items = true;
            self.list.head_end = self.doc.len();
        }
        if self.list.in_items && self.doc.len() > self.list.threshold {
            self.start_streaming();
        }
    }

    /// Cuts the buffered document into head, finished items and the item
    /// in progress, and streams from here on.
    fn start_streaming(&mut self) {
        let doc = std::mem::take(&mut self.doc);
        let mut list = std::mem::take(&mut self.list);
        list.streaming = true;
        list.head = doc[..list.head_end].to_vec();
        if let Ok(v) = serde_norway::from_slice::<serde_json::Value>(&list.head) {
            let context = ListItem::of_list(&v, 0);
            (list.kind, list.api_version) = (context.kind, context.api_version);
        }
        let starts = std::mem::take(&mut list.starts);
        for (i, (start, line)) in starts.iter().enumerate() {
            let end = starts.get(i + 1).map_or(doc.len(), |(s, _)| *s);
            if i + 1 == starts.len() {
                list.item = doc[*start..end].to_vec();
                list.item_line = *line;
            } else {
                self.push_item(&mut list, doc[*start..end].to_vec(), *line);
            }
        }
        self.list = list;
    }

    fn next_framed(&mut self) -> io::Result<Option<Framed>> {
        loop {
            if let Some(out) = self.ready.pop_front() {
                return Ok(Some(out));
            }
            if self.done {
                return Ok(None);
            }
            let mut line = Vec::new();
            if self.input.read_until(b'\n', &mut line)? == 0 {
                self.done = true;
                self.cut(self.line + 1);
                continue;
            }
            self.line += 1;
            if self.line == 1 && line.starts_with(b"\xEF\xBB\xBF") {
                line.drain(..3);
            }
            match marker(&line) {
                Marker::Start { inline_content } => {
                    self.cut(self.line);
                    self.doc.extend_from_slice(&line);
                    self.has_content = inline_content;
                }
                Marker::End => self.cut(self.line + 1),
                Marker::None => self.content_line(line),
            }
        }
    }
}

impl<R: BufRead> Iterator for YamlReader<R> {
    type Item = io::Result<Framed>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_framed().transpose()
    }
}

/// What a line is to the `items:` block.
enum Role {
    /// `- ` at the items' indentation: a new item.
    ItemStart,
    /// Inside an item (deeper, blank or a comment).
    InItems,
    /// Not part of the items.
    Other,
}

impl YamlList {
    fn classify(&mut self, line: &[u8]) -> Role {
        if !self.in_items {
            return Role::Other;
        }
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() || trimmed.starts_with(b"#") {
            return Role::InItems;
        }
        let spaces = line.iter().take_while(|b| **b == b' ').count();
        let rest = &line[spaces..];
        let dash = rest == b"-"
            || rest.starts_with(b"- ")
            || rest.starts_with(b"-\n")
            || rest.starts_with(b"-\r");
        match self.indent {
            None if dash => {
                self.indent = Some(spaces);
                Role::ItemStart
            }
            Some(i) if dash && spaces == i => Role::ItemStart,
            Some(i) if spaces > i => Role::InItems,
            _ => Role::Other,
        }
    }
}

/// `items:` at column 0 (the key of a top-level sequence).
fn is_items_key(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"items:") else {
        return false;
    };
    let rest = rest.trim_ascii();
    rest.is_empty() || rest.starts_with(b"#")
}

/// An item's lines as a document of its own: the `- ` becomes spaces and
/// the item's indentation is removed from every line.
fn dedent_item(item: &[u8], indent: usize) -> Vec<u8> {
    let cut = indent + 2;
    let mut out = Vec::with_capacity(item.len());
    for (n, line) in item.split_inclusive(|b| *b == b'\n').enumerate() {
        if n == 0 {
            let body = line.get(cut..).unwrap_or(b"\n");
            out.extend_from_slice(body);
            continue;
        }
        let spaces = line.iter().take_while(|b| **b == b' ').count();
        out.extend_from_slice(&line[spaces.min(cut)..]);
    }
    out
}

enum Marker {
    Start { inline_content: bool },
    End,
    None,
}

fn marker(line: &[u8]) -> Marker {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if let Some(rest) = line.strip_prefix(b"---") {
        if rest.is_empty() || rest[0] == b' ' || rest[0] == b'\t' {
            let rest = rest.trim_ascii();
            return Marker::Start {
                inline_content: !rest.is_empty() && !rest.starts_with(b"#"),
            };
        }
    }
    if let Some(rest) = line.strip_prefix(b"...") {
        if rest.trim_ascii().is_empty() {
            return Marker::End;
        }
    }
    Marker::None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::STREAM_LIST_BYTES;

    fn frame(input: &str) -> Vec<(u64, String)> {
        YamlReader::with_list_threshold(input.as_bytes(), STREAM_LIST_BYTES)
            .map(|f| match f.unwrap() {
                Framed::Record(r) => (r.line, String::from_utf8(r.bytes).unwrap()),
                Framed::Broken { .. } => panic!("broken"),
            })
            .collect()
    }

    #[test]
    fn documents_are_cut_at_markers_and_keep_their_start_lines() {
        let docs = frame(
            "# comment\na: 1\n---\n---\n# only a comment\n---\nb: 2\nc: 3\n...\n--- {d: 4}\n",
        );
        assert_eq!(
            docs,
            vec![
                (1, "# comment\na: 1\n".to_string()),
                (6, "---\nb: 2\nc: 3\n".to_string()),
                (10, "--- {d: 4}\n".to_string()),
            ]
        );
    }

    #[test]
    fn dashes_inside_a_value_are_not_markers() {
        let docs = frame("a: |\n  ---x\nb: ----\n");
        assert_eq!(docs.len(), 1);
    }

    fn items(input: &str, threshold: usize) -> Vec<(u64, serde_json::Value, Option<ListItem>)> {
        YamlReader::with_list_threshold(input.as_bytes(), threshold)
            .map(|f| match f.unwrap() {
                Framed::Record(r) => (
                    r.line,
                    serde_norway::from_slice(&r.bytes)
                        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&r.bytes))),
                    r.item,
                ),
                Framed::Broken { reason, .. } => panic!("broken: {reason}"),
            })
            .collect()
    }

    const KUBECTL: &str = "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n  data:\n    script: |\n      - not an item\n      items:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: b\nkind: List\nmetadata:\n  resourceVersion: \"\"\n";

    #[test]
    fn a_large_kubectl_yaml_list_is_cut_into_its_items() {
        let got = items(KUBECTL, 20);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].0, got[1].0), (3, 11));
        assert_eq!(got[0].1["metadata"]["name"], "a");
        assert_eq!(got[0].1["data"]["script"], "- not an item\nitems:\n");
        assert_eq!(got[1].1["metadata"]["name"], "b");
        assert_eq!(got[1].2.as_ref().unwrap().index, 1);
        // Below the threshold the document stays whole.
        let whole = items(KUBECTL, STREAM_LIST_BYTES);
        assert_eq!(whole.len(), 1);
        assert_eq!(whole[0].1["items"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn indented_sequences_and_typed_lists_name_the_item_kind() {
        let text = "kind: ConfigMapList\napiVersion: v1\nitems:\n  - metadata:\n      name: a\n  - metadata:\n      name: b\nmetadata: {}\n---\nkind: Other\nmetadata:\n  name: c\n";
        let got = items(text, 10);
        assert_eq!(got.len(), 3);
        let item = got[0].2.as_ref().unwrap();
        assert_eq!(
            (item.kind.as_deref(), item.api_version.as_deref()),
            (Some("ConfigMap"), Some("v1"))
        );
        assert_eq!(got[1].1["metadata"]["name"], "b");
        assert_eq!((got[2].0, got[2].2.is_none()), (9, true));
    }

    #[test]
    fn a_broken_list_tail_is_reported() {
        let text = "apiVersion: v1\nitems:\n- a: 1\n- a: 2\nkind: [List\n";
        let framed: Vec<Framed> = YamlReader::with_list_threshold(text.as_bytes(), 10)
            .map(Result::unwrap)
            .collect();
        assert!(
            matches!(framed.last(), Some(Framed::Broken { reason, .. }) if reason.contains("not valid YAML")),
            "{framed:?}"
        );
    }

    proptest::proptest! {
        /// Streaming changes how a list is framed, never what it holds.
        #[test]
        fn streamed_yaml_items_equal_the_list(
            names in proptest::collection::vec("[a-z0-9 :#-]{0,12}", 0..20),
            threshold in 1usize..300,
            indented in proptest::bool::ANY,
        ) {
            let items_v: Vec<serde_json::Value> = names
                .iter()
                .map(|n| serde_json::json!({"metadata": {"name": n}, "data": {"lines": [n, "x"], "text": format!("{n}\nitems:\n- y")}}))
                .collect();
            let list = serde_json::json!({"apiVersion": "v1", "items": items_v, "kind": "List"});
            let mut text = serde_norway::to_string(&list).unwrap();
            if indented {
                // Re-indent the sequence under `items:` by two spaces.
                let mut out = String::new();
                let mut inside = false;
                for line in text.lines() {
                    if line == "items:" { inside = true; out.push_str(line); out.push('\n'); continue; }
                    if inside && !line.is_empty() && !line.starts_with(' ') && !line.starts_with('-') { inside = false; }
                    if inside && !line.is_empty() { out.push_str("  "); }
                    out.push_str(line);
                    out.push('\n');
                }
                text = out;
            }
            let mut got = Vec::new();
            for (_, v, item) in items(&text, threshold) {
                if item.is_some() { got.push(v); } else { got.extend(v["items"].as_array().cloned().unwrap_or_default()); }
            }
            proptest::prop_assert_eq!(got, items_v);
        }
    }
}
