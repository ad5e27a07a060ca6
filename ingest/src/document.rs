//! Documents: a framed record parsed into a JSON tree, whatever its syntax.
//!
//! Kubernetes tooling writes JSON (`-o json`, audit logs, webhooks) and YAML
//! (`-o yaml`, manifests, multi-document dumps). Both become one
//! `serde_json::Value`, so the format adapters read a single shape. Parse
//! errors carry the line in the input file, not in the record.

use std::io::BufRead;

use serde_json::Value;

use crate::Record;

/// The syntax of an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// JSON Lines, a JSON array, or concatenated JSON values.
    Json,
    /// One or more YAML documents.
    Yaml,
}

impl Syntax {
    /// Guesses the syntax from the start of an input: JSON starts with `{`
    /// or `[` (after blank lines); anything else is read as YAML.
    pub fn sniff(input: &mut impl BufRead) -> std::io::Result<Syntax> {
        let buf = input.fill_buf()?;
        let buf = buf.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(buf);
        Ok(match buf.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') | Some(b'[') | None => Syntax::Json,
            Some(_) => Syntax::Yaml,
        })
    }
}

/// A record that does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Line in the input where the parser stopped.
    pub line: u64,
    /// The parser's message, without its record-relative position.
    pub message: String,
}

/// Parses a record. The error names the line (in the input) and the reason.
pub fn parse(record: &Record, syntax: Syntax) -> Result<Value, ParseError> {
    match syntax {
        Syntax::Json => serde_json::from_slice(&record.bytes).map_err(|e| ParseError {
            line: record.line + (e.line() as u64).saturating_sub(1),
            message: format!("invalid JSON: {}", strip_position(&e.to_string())),
        }),
        Syntax::Yaml => serde_norway::from_slice(&record.bytes).map_err(|e| ParseError {
            line: e.location().map_or(record.line, |l| {
                record.line + (l.line() as u64).saturating_sub(1)
            }),
            message: format!("invalid YAML: {}", strip_position(&e.to_string())),
        }),
    }
}

/// Serializes a (redacted) document for the quarantine, in its own syntax
/// so that `annal quarantine retry` reads it back the same way.
pub fn to_bytes(value: &Value, syntax: Syntax) -> Vec<u8> {
    match syntax {
        Syntax::Json => serde_json::to_vec(value).unwrap_or_default(),
        Syntax::Yaml => serde_norway::to_string(value)
            .map(String::into_bytes)
            .unwrap_or_default(),
    }
}

/// Drops the parser's own "at line X column Y" (relative to the record),
/// since the message leads with the file line.
fn strip_position(message: &str) -> &str {
    message.find(" at line ").map_or(message, |i| &message[..i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_line_in_the_file() {
        let rec = Record::new(10, b"{\n  \"a\": 1,\n}\n".to_vec());
        let err = parse(&rec, Syntax::Json).unwrap_err();
        assert_eq!(err.line, 12);
        assert!(
            err.message.starts_with("invalid JSON: trailing comma"),
            "{err:?}"
        );
        let rec = Record::new(5, b"---\na:\n  b: 1\n c: 2\n".to_vec());
        let err = parse(&rec, Syntax::Yaml).unwrap_err();
        assert_eq!(err.line, 8, "{err:?}");
        assert!(err.message.starts_with("invalid YAML"), "{err:?}");
    }

    #[test]
    fn sniffing_tells_json_from_yaml() {
        assert_eq!(
            Syntax::sniff(&mut &b"\n  {\"a\":1}"[..]).unwrap(),
            Syntax::Json
        );
        assert_eq!(Syntax::sniff(&mut &b"[1]"[..]).unwrap(), Syntax::Json);
        assert_eq!(
            Syntax::sniff(&mut &b"# c\napiVersion: v1"[..]).unwrap(),
            Syntax::Yaml
        );
        assert_eq!(Syntax::sniff(&mut &b"---\na: 1"[..]).unwrap(), Syntax::Yaml);
    }
}
