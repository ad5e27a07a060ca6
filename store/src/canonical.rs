//! RFC 8785 (JCS) canonical JSON, written directly.
//!
//! The generic `serde_json_canonicalizer` buffers and sorts every map it
//! meets, which made canonical encoding the largest cost of ingest. Leaves
//! have one known shape, so this module writes it directly: struct fields in
//! their (fixed, sorted) order, `data` values with keys sorted by UTF-16 code
//! units, strings escaped as JSON.stringify does (identical to serde_json's
//! escaping), and numbers as ECMAScript prints them. Property tests check it
//! byte for byte against `serde_json_canonicalizer`, the reference.

use annal_schemas::{key_order, Actor, Envelope, EnvelopeRef, Header, Node};
use serde_json::{Number, Value};
use smallvec::SmallVec;

use crate::index::Facts;
use crate::Entry;

/// Largest integer every JCS implementation reads back exactly (2^53).
const MAX_SAFE_INTEGER: u64 = 1 << 53;

/// A value with a canonical encoding.
pub trait Canonical {
    /// Appends the canonical bytes to `out`.
    fn write_canonical(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error>;
}

/// The canonical bytes of `value`.
pub fn to_vec<T: Canonical + ?Sized>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(1024);
    value.write_canonical(&mut out)?;
    Ok(out)
}

/// An envelope reduced to what a commit needs: its id, canonical bytes and
/// what the derived indexes will record about it.
///
/// Encoding runs on the decoding thread, and the parsed JSON tree is freed
/// there too; the committing thread and the queue between them only carry
/// compact values, which keeps memory flat.
#[derive(Clone, Debug, PartialEq)]
pub struct PreparedEvent {
    pub(crate) id: String,
    pub(crate) canonical: Vec<u8>,
    pub(crate) facts: Facts,
}

impl PreparedEvent {
    /// Encodes `envelope`.
    pub fn new(envelope: &Envelope) -> Result<Self, serde_json::Error> {
        PreparedEvent::of_parts(&envelope.header(), &envelope.data)
    }

    /// Encodes an envelope read through a borrow (the ingest fast path):
    /// the same bytes and facts as [`PreparedEvent::new`] gives for the
    /// same envelope read whole.
    pub fn from_ref(envelope: &EnvelopeRef<'_>) -> Result<Self, serde_json::Error> {
        PreparedEvent::of_parts(&envelope.header(), &envelope.data)
    }

    fn of_parts<D: Canonical + crate::data_view::Data>(
        header: &Header<'_>,
        data: &D,
    ) -> Result<Self, serde_json::Error> {
        let mut canonical = Vec::with_capacity(1024);
        write_event(&mut canonical, header, data)?;
        Ok(PreparedEvent {
            id: header.id.to_string(),
            canonical,
            facts: Facts::of_parts(header, data),
        })
    }

    /// The envelope id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// Appends a leaf's bytes, `{"event":…,"index":N,"recorded_at":"…"}`,
/// given its event's canonical bytes, to `out`.
pub(crate) fn write_leaf(out: &mut Vec<u8>, event: &[u8], index: u64, recorded_at: &str) {
    out.extend_from_slice(b"{\"event\":");
    out.extend_from_slice(event);
    out.extend_from_slice(b",\"index\":");
    write_u64(out, index);
    out.extend_from_slice(b",\"recorded_at\":");
    write_str(out, recorded_at);
    out.push(b'}');
}

/// A prepared event's leaf, written where the log wants it (see
/// [`SegmentWriter::append`](crate::leaves::SegmentWriter::append)).
pub(crate) struct EventLeaf<'a> {
    pub(crate) event: &'a [u8],
    pub(crate) recorded_at: &'a str,
}

impl crate::leaves::Leaf for EventLeaf<'_> {
    fn write(&self, index: u64, out: &mut Vec<u8>) {
        write_leaf(out, self.event, index, self.recorded_at);
    }
}

impl Canonical for Entry {
    fn write_canonical(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let event = to_vec(&self.event)?;
        write_leaf(out, &event, self.index, &self.recorded_at.to_string());
        Ok(())
    }
}

impl Canonical for Envelope {
    fn write_canonical(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        write_event(out, &self.header(), &self.data)
    }
}

/// Writes an envelope given as its header and its `data` (either tree).
fn write_event<D: Canonical + ?Sized>(
    out: &mut Vec<u8>,
    header: &Header<'_>,
    data: &D,
) -> Result<(), serde_json::Error> {
    // Field names in sorted order; optional ones omitted when absent, as
    // the serde derive does.
    let mut fields = Fields::new(out);
    if let Some(actor) = header.actor {
        fields.key("actor");
        actor.write_canonical(fields.out)?;
    }
    if let Some(cluster) = header.cluster {
        fields.key("cluster");
        write_str(fields.out, cluster);
    }
    fields.key("data");
    data.write_canonical(fields.out)?;
    fields.key("id");
    write_str(fields.out, header.id);
    fields.key("schema");
    write_str(fields.out, header.schema);
    if let Some(source) = header.source {
        fields.key("source");
        write_str(fields.out, source);
    }
    fields.key("time");
    write_str(fields.out, &header.time.to_string());
    fields.key("type");
    write_str(fields.out, header.event_type.as_str());
    fields.end();
    Ok(())
}

impl Canonical for Actor {
    fn write_canonical(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let mut fields = Fields::new(out);
        for (name, value) in [
            ("controller", &self.controller),
            ("credential", &self.credential),
            ("field_manager", &self.field_manager),
            ("impersonated", &self.impersonated),
            ("principal", &self.principal),
        ] {
            if let Some(v) = value {
                fields.key(name);
                write_str(fields.out, v);
            }
        }
        fields.end();
        Ok(())
    }
}

impl Canonical for Value {
    fn write_canonical(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        match self {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Bool(true) => out.extend_from_slice(b"true"),
            Value::Bool(false) => out.extend_from_slice(b"false"),
            Value::Number(n) => write_number(out, n)?,
            Value::String(s) => write_str(out, s),
            Value::Array(items) => write_array(out, items)?,
            Value::Object(map) => {
                if map.keys().is_sorted_by(|a, b| key_order(a, b).is_le()) {
                    write_object(out, map)?;
                } else {
                    // On the stack for the usual sizes: no allocation per
                    // object.
                    let mut entries: SmallVec<[(&String, &Value); 16]> = SmallVec::new();
                    entries.extend(map.iter());
                    entries.sort_unstable_by(|a, b| key_order(a.0, b.0));
                    write_object(out, entries)?;
                }
            }
        }
        Ok(())
    }
}

impl Canonical for Node<'_> {
    fn write_canonical(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        match self {
            Node::Null => out.extend_from_slice(b"null"),
            Node::Bool(true) => out.extend_from_slice(b"true"),
            Node::Bool(false) => out.extend_from_slice(b"false"),
            Node::Number(n) => write_number(out, n)?,
            Node::String(s) => write_str(out, s),
            Node::Array(items) => write_array(out, items)?,
            Node::Object(entries) => {
                // Keys are unique and in canonical order already.
                let mut fields = Fields::new(out);
                for (k, v) in entries {
                    fields.key(k);
                    v.write_canonical(fields.out)?;
                }
                fields.end();
            }
        }
        Ok(())
    }
}

/// Writes `items` as an array (of either tree's values).
fn write_array<T: Canonical>(out: &mut Vec<u8>, items: &[T]) -> Result<(), serde_json::Error> {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        item.write_canonical(out)?;
    }
    out.push(b']');
    Ok(())
}

/// Writes `entries`, already in key order, as an object.
fn write_object<'a>(
    out: &mut Vec<u8>,
    entries: impl IntoIterator<Item = (&'a String, &'a Value)>,
) -> Result<(), serde_json::Error> {
    let mut fields = Fields::new(out);
    for (k, v) in entries {
        fields.key(k);
        v.write_canonical(fields.out)?;
    }
    fields.end();
    Ok(())
}

/// Writes `{"k":v,...}` one key at a time.
struct Fields<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Fields<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Fields { out, first: true }
    }

    fn key(&mut self, name: &str) {
        if !std::mem::take(&mut self.first) {
            self.out.push(b',');
        }
        write_str(self.out, name);
        self.out.push(b':');
    }

    fn end(self) {
        self.out.push(b'}');
    }
}

/// serde_json escapes exactly what JSON.stringify escapes: `"`, `\`, and
/// control characters (as \b \t \n \f \r or lowercase \u00xx).
///
/// Most strings of a manifest need no escape at all; those are copied
/// between quotes without the serializer's set-up per call (the keys and
/// values that make up `data` are short). The scan has no early exit, so
/// that it compiles to vector compares.
fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let needs_escape = bytes.iter().fold(false, |any, &b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if needs_escape {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    } else {
        out.reserve(bytes.len() + 2);
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
    }
}

fn write_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Integers within ±2^53 print as themselves; anything else is a double and
/// takes ECMAScript's shortest round-trip form, done by the reference crate.
fn write_number(out: &mut Vec<u8>, n: &Number) -> Result<(), serde_json::Error> {
    if let Some(u) = n.as_u64().filter(|u| *u <= MAX_SAFE_INTEGER) {
        write_u64(out, u);
    } else if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= MAX_SAFE_INTEGER) {
        out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
    } else {
        out.extend_from_slice(&serde_json_canonicalizer::to_vec(n)?);
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::prelude::*;

    use super::*;

    fn arb_value() -> impl Strategy<Value = Value> {
        arb_value_from("\\PC*", any::<String>())
    }

    /// JSON values whose strings come from `text` (besides any string) and
    /// whose member names come from `names`.
    pub(crate) fn arb_value_from(
        text: &'static str,
        names: impl Strategy<Value = String> + Clone + 'static,
    ) -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            text.prop_map(Value::String),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::vec((names.clone(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn values_match_the_reference_canonicalizer(v in arb_value()) {
            prop_assert_eq!(to_vec(&v).unwrap(), serde_json_canonicalizer::to_vec(&v).unwrap());
        }

        /// A borrowed tree read from a value's text encodes as the value.
        #[test]
        fn nodes_match_the_reference_canonicalizer(v in arb_value()) {
            let text = serde_json::to_string(&v).unwrap();
            let node: Node = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(to_vec(&node).unwrap(), serde_json_canonicalizer::to_vec(&v).unwrap());
        }

        /// An envelope read through a borrow is prepared (bytes and index
        /// facts) exactly as the same envelope read whole: the quickstart's
        /// envelopes, one member of `data` replaced.
        #[test]
        fn envelopes_prepare_the_same_from_either_reading(
            pick in any::<prop::sample::Index>(),
            at in any::<prop::sample::Index>(),
            with in arb_value_from("[a-z]{0,3}", "(name|kind|metadata|labels|app|partial|[a-z]{1,2})"),
        ) {
            let lines: Vec<&str> = QUICKSTART.lines().collect();
            let mut env: Value = serde_json::from_str(lines[pick.index(lines.len())]).unwrap();
            let mut paths = Vec::new();
            pointers(&env["data"], "/data".to_string(), &mut paths);
            if let Some(slot) = env.pointer_mut(&paths[at.index(paths.len())]) {
                *slot = with;
            }
            let line = env.to_string();
            if let Some(borrowed) = EnvelopeRef::parse(line.as_bytes()) {
                let whole = Envelope::parse(line.as_bytes()).unwrap();
                prop_assert_eq!(
                    PreparedEvent::from_ref(&borrowed).unwrap(),
                    PreparedEvent::new(&whole).unwrap()
                );
            }
        }

        #[test]
        fn entries_match_the_reference_canonicalizer(
            data in arb_value(),
            cluster in proptest::option::of("[a-z0-9-]{1,12}"),
            source in proptest::option::of(any::<String>()),
            principal in proptest::option::of(any::<String>()),
            controller in proptest::option::of(any::<String>()),
            impersonated in proptest::option::of(any::<String>()),
            field_manager in proptest::option::of(any::<String>()),
            id in "\\PC{1,20}",
            index in any::<u64>(),
            micros in 0i64..4_000_000_000_000_000,
        ) {
            let actor = (principal.is_some() || controller.is_some()).then_some(Actor {
                principal,
                controller,
                credential: None,
                impersonated,
                field_manager,
            });
            let entry = Entry {
                index: index % (1 << 53),
                recorded_at: annal_schemas::Timestamp::from_unix_micros(micros).unwrap(),
                event: Envelope {
                    schema: annal_schemas::SCHEMA_V1.into(),
                    id,
                    event_type: annal_schemas::EventType::ControllerMetrics,
                    time: annal_schemas::Timestamp::from_unix_micros(micros / 3).unwrap(),
                    cluster,
                    source,
                    actor,
                    data,
                },
            };
            prop_assert_eq!(to_vec(&entry).unwrap(), serde_json_canonicalizer::to_vec(&entry).unwrap());
        }
    }

    /// The quickstart's envelopes: eleven types, real shapes.
    const QUICKSTART: &str = include_str!("../../examples/quickstart.jsonl");

    /// Every JSON pointer in `v`, from `here`.
    fn pointers(v: &Value, here: String, out: &mut Vec<String>) {
        out.push(here.clone());
        match v {
            Value::Object(m) => {
                for (k, c) in m {
                    let k = k.replace('~', "~0").replace('/', "~1");
                    pointers(c, format!("{here}/{k}"), out);
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    pointers(c, format!("{here}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn every_quickstart_envelope_prepares_the_same_from_either_reading() {
        let mut versions = 0;
        for line in QUICKSTART.lines() {
            let borrowed = EnvelopeRef::parse(line.as_bytes()).unwrap();
            let whole = Envelope::parse(line.as_bytes()).unwrap();
            let a = PreparedEvent::from_ref(&borrowed).unwrap();
            assert_eq!(a, PreparedEvent::new(&whole).unwrap(), "{line}");
            versions += usize::from(a.facts.version.is_some());
        }
        // (The comparison covers the object versions, not only rows.)
        assert!(versions >= 5, "{versions}");
    }

    #[test]
    fn strings_escape_as_serde_json_escapes_them() {
        let mut texts: Vec<String> = (0u8..0x80).map(|b| char::from(b).to_string()).collect();
        texts.extend(
            ["plain", "tab\there", "quote\"d", "back\\slash", "é€😀", ""].map(String::from),
        );
        for text in texts {
            let mut ours = Vec::new();
            write_str(&mut ours, &text);
            assert_eq!(ours, serde_json::to_vec(&text).unwrap(), "{text:?}");
        }
    }

    #[test]
    fn known_vectors() {
        let v: Value =
            serde_json::from_str(r#"{"b":[1,2.5,1e21,-0.0],"a":"\u001f\"é","€":1,"😀":2,"ﬀ":3}"#)
                .unwrap();
        let got = String::from_utf8(to_vec(&v).unwrap()).unwrap();
        // U+1F600 (surrogates D83D DE00) sorts before U+FB00 in UTF-16.
        assert_eq!(
            got,
            "{\"a\":\"\\u001f\\\"é\",\"b\":[1,2.5,1e+21,0],\"€\":1,\"😀\":2,\"ﬀ\":3}"
        );
    }
}
