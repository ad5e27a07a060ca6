//! The `name` column: a 32-bit hash of an entry's `data.metadata.name`,
//! so that "every event of the object named N" reads four bytes a row of
//! the chunks and then only the few leaves whose hash matches, instead of
//! every leaf of the cluster (a hundred thousand at 10M entries, for the
//! ten or so events of one object).
//!
//! Invariant: **a row whose `data.metadata.name` is the string `n` has the
//! hash [`hash`]`(n)`, never 0; a row without such a string has 0.** (The
//! column has no nulls: a Parquet reader spreads a nullable column's
//! values over its nulls, which cost more than the comparison.) A read
//! that keeps the rows of one hash therefore keeps every row of that name
//! (and, one time in four billion, a row of another name, which the scan's
//! own filter drops): the hash narrows, it never decides.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

/// What the column holds for a row without a name.
pub const NONE: u32 = 0;

/// The hash of an object name: the first four bytes of its BLAKE3, little
/// endian, and 1 where those are 0 ([`NONE`]); stable across versions and
/// machines, as it is stored.
pub fn hash(name: &str) -> u32 {
    let h = blake3::hash(name.as_bytes());
    let b = h.as_bytes();
    u32::from_le_bytes([b[0], b[1], b[2], b[3]]).max(1)
}

/// The hash of `data.metadata.name`, from the decoded `data`.
pub(crate) fn of_value<D: crate::data_view::Data>(data: &D) -> Option<u32> {
    data.get("metadata")?.get("name")?.str().map(hash)
}

/// The hash of `data.metadata.name`, from `data`'s JSON text, without
/// building a tree: only `metadata` and its `name` are looked at, and
/// anything that is not an object with a string there has none (as the
/// decoded `data` has none).
pub(crate) fn of_text(data: &str) -> Option<u32> {
    let metadata = object(data)?.metadata?;
    let name = object(metadata.get())?.name?;
    let name: Cow<str> = serde_json::from_str(name.get()).ok()?;
    Some(hash(&name))
}

/// The two members [`of_text`] looks at, of a JSON object.
#[derive(Deserialize)]
struct Members<'a> {
    #[serde(default, borrow)]
    metadata: Option<&'a RawValue>,
    #[serde(default, borrow)]
    name: Option<&'a RawValue>,
}

/// `text`'s members, if it is an object (serde would also fill a struct
/// from an array, by position).
fn object(text: &str) -> Option<Members<'_>> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    serde_json::from_str(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_value_agree() {
        let cases = [
            (
                r#"{"metadata":{"name":"web-1","namespace":"d"},"kind":"Pod"}"#,
                Some("web-1"),
            ),
            (
                r#"{"kind":"Pod","metadata":{"namespace":"d","name":"w\u00e9b \"1\""}}"#,
                Some("wéb \"1\""),
            ),
            (r#"{"metadata":{"name":1}}"#, None),
            (r#"{"metadata":{"name":null}}"#, None),
            (r#"{"metadata":"web-1"}"#, None),
            (r#"{"metadata":null}"#, None),
            (r#"{"name":"web-1"}"#, None),
            (r#"{"spec":{"metadata":{"name":"inner"}}}"#, None),
            (r#"["metadata"]"#, None),
            (r#"[{"name":"a"},"b"]"#, None),
            (r#"{"metadata":[{"name":"a"},"b"]}"#, None),
            (r#""web-1""#, None),
            (r#"{}"#, None),
        ];
        for (text, name) in cases {
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(of_text(text), name.map(hash), "{text}");
            assert_eq!(of_value(&value), name.map(hash), "{text}");
        }
        assert_ne!(hash("web-1"), hash("web-2"));
        assert!(cases.iter().all(|(_, n)| n.is_none_or(|n| hash(n) != NONE)));
    }
}
