//! Framing YAML streams: one record per document, with its first line.
//!
//! Documents are cut at `---` and `...` marker lines without parsing, so a
//! broken document costs one rejection and the rest of a multi-document
//! file (a `kubectl get -o yaml` dump, a Helm manifest) still ingests. Each
//! record keeps its `---` line, so parser error lines map back to the file.

use std::io::{self, BufRead};

use crate::record::{Framed, Record, MAX_RECORD_BYTES};

/// Frames YAML documents out of a reader.
pub struct YamlReader<R> {
    input: R,
    line: u64,
    doc: Vec<u8>,
    doc_start: u64,
    has_content: bool,
    done: bool,
}

impl<R: BufRead> YamlReader<R> {
    /// Frames `input`.
    pub fn new(input: R) -> Self {
        YamlReader {
            input,
            line: 0,
            doc: Vec::new(),
            doc_start: 1,
            has_content: false,
            done: false,
        }
    }

    /// Ends the current document; returns it when it holds anything but
    /// blank lines and comments.
    fn cut(&mut self, next_start: u64) -> Option<Framed> {
        let doc = std::mem::take(&mut self.doc);
        let start = std::mem::replace(&mut self.doc_start, next_start);
        let had = std::mem::replace(&mut self.has_content, false);
        if !had {
            return None;
        }
        Some(if doc.len() > MAX_RECORD_BYTES {
            Framed::Broken {
                line: start,
                reason: format!("YAML document is larger than {MAX_RECORD_BYTES} bytes"),
                raw: doc[..1024].to_vec(),
            }
        } else {
            Framed::Record(Record {
                line: start,
                bytes: doc,
            })
        })
    }

    fn next_framed(&mut self) -> io::Result<Option<Framed>> {
        while !self.done {
            let mut line = Vec::new();
            if self.input.read_until(b'\n', &mut line)? == 0 {
                self.done = true;
                return Ok(self.cut(self.line + 1));
            }
            self.line += 1;
            if self.line == 1 && line.starts_with(b"\xEF\xBB\xBF") {
                line.drain(..3);
            }
            match marker(&line) {
                Marker::Start { inline_content } => {
                    let out = self.cut(self.line);
                    self.doc.extend_from_slice(&line);
                    self.has_content = inline_content;
                    if out.is_some() {
                        return Ok(out);
                    }
                }
                Marker::End => {
                    let out = self.cut(self.line + 1);
                    if out.is_some() {
                        return Ok(out);
                    }
                }
                Marker::None => {
                    if self.doc.len() <= MAX_RECORD_BYTES {
                        self.doc.extend_from_slice(&line);
                    }
                    let t = line.trim_ascii();
                    if !t.is_empty() && !t.starts_with(b"#") && !t.starts_with(b"%") {
                        self.has_content = true;
                    }
                }
            }
        }
        Ok(None)
    }
}

impl<R: BufRead> Iterator for YamlReader<R> {
    type Item = io::Result<Framed>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_framed().transpose()
    }
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

    fn frame(input: &str) -> Vec<(u64, String)> {
        YamlReader::new(input.as_bytes())
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
}
