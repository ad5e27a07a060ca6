//! Rendered manifests: the Kubernetes objects in a file or a directory of
//! YAML and JSON files (multi-document, `*List`s expanded), as a prune
//! plan's desired set.
//!
//! They are read with the same framing as ingest, so a Helm template dump
//! or `kustomize build` output reads as it would be ingested; unlike
//! ingest, a document that is not an object is an error naming the file and
//! line, because a desired set with a hole would plan a deletion.

use std::io::BufReader;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::document::{self, Syntax};
use crate::record::Framed;
use crate::yaml::YamlReader;
use crate::{RecordReader, STREAM_LIST_BYTES};

/// One object of the desired set.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Manifest {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.namespace` ("" when absent).
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `file:line` of its document.
    pub source: String,
}

/// Why the desired set cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// A file or directory cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A document does not parse, or is not a Kubernetes object.
    #[error("{path}:{line}: {reason}")]
    Document {
        /// The file.
        path: PathBuf,
        /// 1-based line of the document.
        line: u64,
        /// What is wrong.
        reason: String,
    },
}

/// Every object under `path`: the file itself, or each `.yaml`, `.yml` and
/// `.json` file below the directory (recursively, in name order).
pub fn read(path: &Path) -> Result<Vec<Manifest>, ManifestError> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| ManifestError::Io { path: p, source }
    };
    let mut out = Vec::new();
    if path.is_dir() {
        let mut files = Vec::new();
        collect_files(path, &mut files)?;
        for f in files {
            read_file(&f, &mut out)?;
        }
    } else {
        std::fs::metadata(path).map_err(io(path))?;
        read_file(path, &mut out)?;
    }
    Ok(out)
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), ManifestError> {
    let io = |source| ManifestError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io)?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect_files(&p, out)?;
        } else if p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        {
            out.push(p);
        }
    }
    Ok(())
}

fn read_file(path: &Path, out: &mut Vec<Manifest>) -> Result<(), ManifestError> {
    let io = |source| ManifestError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut input = BufReader::new(std::fs::File::open(path).map_err(io)?);
    let syntax = Syntax::sniff(&mut input).map_err(io)?;
    let framer: Box<dyn Iterator<Item = std::io::Result<Framed>>> = match syntax {
        Syntax::Json => Box::new(RecordReader::new(input)),
        Syntax::Yaml => Box::new(YamlReader::with_list_threshold(input, STREAM_LIST_BYTES)),
    };
    let bad = |line: u64, reason: String| ManifestError::Document {
        path: path.to_path_buf(),
        line,
        reason,
    };
    for framed in framer {
        let record = match framed.map_err(io)? {
            Framed::Record(r) => r,
            Framed::Broken { line, reason, .. } => return Err(bad(line, reason)),
        };
        let mut value = document::parse(&record, syntax).map_err(|e| bad(e.line, e.message))?;
        if let Some(item) = &record.item {
            item.fill(&mut value);
        }
        if value.is_null() {
            continue; // an empty document (a trailing `---`)
        }
        let source = format!("{}:{}", path.display(), record.line);
        objects(value, &source, &mut |m| out.push(m)).map_err(|reason| bad(record.line, reason))?;
    }
    Ok(())
}

/// The objects of one document (a `*List`'s items, or itself).
fn objects(value: Value, source: &str, push: &mut dyn FnMut(Manifest)) -> Result<(), String> {
    let text = |v: &Value, field: &str| -> Result<String, String> {
        let mut at = v;
        for part in field.split('.') {
            at = at.get(part).ok_or_else(|| format!("no {field}"))?;
        }
        at.as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("{field} is not a string"))
    };
    let kind = text(&value, "kind")?;
    if kind.ends_with("List") {
        if let Some(items) = value.get("items").and_then(Value::as_array) {
            for item in items {
                objects(item.clone(), source, push)?;
            }
            return Ok(());
        }
    }
    push(Manifest {
        api_version: text(&value, "apiVersion")?,
        kind,
        namespace: value
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        name: text(&value, "metadata.name")?,
        source: source.to_string(),
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_document_yaml_lists_and_json_all_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n  namespace: web\n---\n\
             apiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: two\n---\n",
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(
            dir.path().join("sub/b.json"),
            r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"web"}}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a manifest").unwrap();
        let got: Vec<(String, String, String)> = read(dir.path())
            .unwrap()
            .into_iter()
            .map(|m| (m.kind, m.namespace, m.name))
            .collect();
        assert_eq!(
            got,
            [
                ("ConfigMap".into(), "web".into(), "one".into()),
                ("Deployment".into(), "".into(), "two".into()),
                ("Namespace".into(), "".into(), "web".into()),
            ]
        );
    }

    #[test]
    fn a_document_that_is_not_an_object_names_its_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("bad.yaml");
        std::fs::write(&f, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n---\nkind: Secret\nmetadata: {}\n").unwrap();
        let err = read(&f).unwrap_err().to_string();
        assert!(
            err.contains("bad.yaml:5") && err.contains("apiVersion"),
            "{err}"
        );
    }
}
