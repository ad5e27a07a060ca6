//! A JSON tree that borrows its strings from the input: the `data` of the
//! decoding fast path ([`EnvelopeRef`](crate::EnvelopeRef)).
//!
//! Building a `serde_json::Value` allocates every key and every string and
//! hashes every key into an index map, and that was the largest cost of
//! reading an envelope. A [`Node`] allocates one vector per object or array
//! and a string only when the input escaped it. Objects keep their keys in
//! canonical order (UTF-16 code units, as RFC 8785 sorts them), a repeated
//! key resolved as `Value` resolves it (the last one wins), so the
//! canonical writer never sorts and a lookup is a binary search.
//!
//! `&Node` is a serde `Deserializer` that answers as `&Value` does, method
//! for method (its source was the model), so the typed `data` shapes accept
//! exactly the same documents either way; tests hold the two in agreement.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, StrDeserializer};
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
    Unexpected, VariantAccess, Visitor,
};
use serde::Deserialize;
use serde_json::{Error, Number};

/// One JSON value, its strings borrowed from the input where they can be.
#[derive(Clone, Debug, PartialEq)]
pub enum Node<'a> {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// A number, as serde_json reads it.
    Number(Number),
    /// A string (owned only when the input escaped it).
    String(Cow<'a, str>),
    /// An array.
    Array(Vec<Node<'a>>),
    /// An object: keys unique and in [`key_order`].
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
}

impl<'a> Node<'a> {
    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        let Node::Object(entries) = self else {
            return None;
        };
        entries
            .binary_search_by(|(k, _)| key_order(k, key))
            .ok()
            .map(|i| &entries[i].1)
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::String(s) => Some(s),
            _ => None,
        }
    }

    /// The same value as a `serde_json::Value`.
    pub fn to_value(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Number(n) => Value::Number(n.clone()),
            Node::String(s) => Value::String(s.to_string()),
            Node::Array(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_value()))
                    .collect(),
            ),
        }
    }

    fn unexpected(&self) -> Unexpected<'_> {
        match self {
            Node::Null => Unexpected::Unit,
            Node::Bool(b) => Unexpected::Bool(*b),
            Node::Number(n) => {
                if let Some(u) = n.as_u64() {
                    Unexpected::Unsigned(u)
                } else if let Some(i) = n.as_i64() {
                    Unexpected::Signed(i)
                } else {
                    Unexpected::Float(n.as_f64().unwrap_or_default())
                }
            }
            Node::String(s) => Unexpected::Str(s),
            Node::Array(_) => Unexpected::Seq,
            Node::Object(_) => Unexpected::Map,
        }
    }

    fn invalid_type<E: de::Error>(&self, expected: &dyn de::Expected) -> E {
        E::invalid_type(self.unexpected(), expected)
    }
}

/// The order of object keys in canonical JSON: by UTF-16 code units
/// (RFC 8785, section 3.2.3).
///
/// UTF-8 byte order is code point order, which is UTF-16 order except
/// between a character above U+FFFF (a surrogate pair, D800-DFFF, in
/// UTF-16; lead byte F0-F4 in UTF-8) and one in U+E000-U+FFFF (lead byte
/// EE or EF): there UTF-16 puts the surrogate first. So the bytes decide,
/// and only that pair of lead bytes at the first difference is turned
/// around (continuation bytes, 80-BF, never look like either).
pub fn key_order(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    match a.iter().zip(b).position(|(x, y)| x != y) {
        None => a.len().cmp(&b.len()),
        Some(i) => {
            let (x, y) = (a[i], b[i]);
            let high = |c: u8| c >= 0xF0;
            let private = |c: u8| c == 0xEE || c == 0xEF;
            if high(x) && private(y) {
                Ordering::Less
            } else if private(x) && high(y) {
                Ordering::Greater
            } else {
                x.cmp(&y)
            }
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Node<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node<'de>, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node<'de>, E> {
        Ok(Node::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node<'de>, E> {
        Ok(Node::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Node<'de>, E> {
        // As `Value` does: a non-finite float (which JSON text cannot
        // spell) becomes null.
        Ok(Number::from_f64(v).map_or(Node::Null, Node::Number))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Owned(v)))
    }

    fn visit_unit<E>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_none<E>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node<'de>, D::Error> {
        Deserialize::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        let mut entries: Vec<(Cow<'de, str>, Node<'de>)> = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let value = map.next_value()?;
            entries.push((key, value));
        }
        if !entries.is_sorted_by(|a, b| key_order(&a.0, &b.0).is_lt()) {
            // Stable, so repeated keys stay in input order and the last one
            // is the one kept.
            entries.sort_by(|a, b| key_order(&a.0, &b.0));
            let mut unique: Vec<(Cow<'de, str>, Node<'de>)> = Vec::with_capacity(entries.len());
            for entry in entries {
                match unique.last_mut() {
                    Some(last) if last.0 == entry.0 => *last = entry,
                    _ => unique.push(entry),
                }
            }
            entries = unique;
        }
        Ok(Node::Object(entries))
    }
}

/// An object key, borrowed when the input did not escape it.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// `&Node` as serde_json's `&Value`: the same visitor calls and the same
/// errors for the same document. Strings are lent for the tree's whole
/// lifetime, so borrowed views (`&'a str` fields) read them without copies,
/// escaped or not.
impl<'de> Deserializer<'de> for &'de Node<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Node::Null => visitor.visit_unit(),
            Node::Bool(b) => visitor.visit_bool(*b),
            Node::Number(n) => n.deserialize_any(visitor),
            Node::String(s) => visitor.visit_borrowed_str(s),
            Node::Array(items) => visit_array(items, visitor),
            Node::Object(entries) => visit_object(entries, visitor),
        }
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_number(self, visitor)
    }

    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_number(self, visitor)
    }

    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_number(self, visitor)
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_number(self, visitor)
    }

    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Node::Number(n) => n.deserialize_i128(visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_number(self, visitor)
    }

    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_number(self, visitor)
    }

    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_number(self, visitor)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_number(self, visitor)
    }

    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Node::Number(n) => n.deserialize_u128(visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_number(self, visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_number(self, visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Node::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self {
            // Enums are maps with a single key.
            Node::Object(entries) => match entries.as_slice() {
                [(variant, value)] => visitor.visit_enum(EnumRef {
                    variant,
                    value: Some(value),
                }),
                _ => Err(de::Error::invalid_value(
                    Unexpected::Map,
                    &"map with a single key",
                )),
            },
            Node::String(variant) => visitor.visit_enum(EnumRef {
                variant,
                value: None,
            }),
            other => Err(de::Error::invalid_type(
                other.unexpected(),
                &"string or map",
            )),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        // serde_json's `RawValue` asks for its text through a private
        // token; a tree has no text, so such a field takes the general
        // path (the caller falls back on any error).
        if name.starts_with("$serde_json::") {
            return Err(de::Error::custom(
                "raw JSON values are not read from a Node",
            ));
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Node::Bool(b) => visitor.visit_bool(*b),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Node::String(s) => visitor.visit_borrowed_str(s),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Node::String(s) => visitor.visit_borrowed_str(s),
            Node::Array(items) => visit_array(items, visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Node::Null => visitor.visit_unit(),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Node::Array(items) => visit_array(items, visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Node::Object(entries) => visit_object(entries, visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self {
            Node::Array(items) => visit_array(items, visitor),
            Node::Object(entries) => visit_object(entries, visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }
}

/// Numbers of every integer and float width, as `&Value` reads them.
fn visit_number<'de, V: Visitor<'de>>(node: &'de Node<'de>, visitor: V) -> Result<V::Value, Error> {
    match node {
        Node::Number(n) => n.deserialize_any(visitor),
        _ => Err(node.invalid_type(&visitor)),
    }
}

fn visit_array<'de, V: Visitor<'de>>(
    items: &'de [Node<'de>],
    visitor: V,
) -> Result<V::Value, Error> {
    let len = items.len();
    let mut seq = SeqRef { iter: items.iter() };
    let value = visitor.visit_seq(&mut seq)?;
    if seq.iter.len() == 0 {
        Ok(value)
    } else {
        Err(de::Error::invalid_length(len, &"fewer elements in array"))
    }
}

fn visit_object<'de, V: Visitor<'de>>(
    entries: &'de [(Cow<'de, str>, Node<'de>)],
    visitor: V,
) -> Result<V::Value, Error> {
    let len = entries.len();
    let mut map = MapRef {
        iter: entries.iter(),
        value: None,
    };
    let value = visitor.visit_map(&mut map)?;
    if map.iter.len() == 0 {
        Ok(value)
    } else {
        Err(de::Error::invalid_length(len, &"fewer elements in map"))
    }
}

struct SeqRef<'de> {
    iter: std::slice::Iter<'de, Node<'de>>,
}

impl<'de> SeqAccess<'de> for SeqRef<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.iter.next().map(|n| seed.deserialize(n)).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

struct MapRef<'de> {
    iter: std::slice::Iter<'de, (Cow<'de, str>, Node<'de>)>,
    value: Option<&'de Node<'de>>,
}

impl<'de> MapAccess<'de> for MapRef<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.iter.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        // A plain string key. serde_json's own key deserializer also reads
        // numbers and booleans out of keys; a shape with such keys fails
        // here and takes the general path.
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(value),
            None => Err(de::Error::custom("value is missing")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

struct EnumRef<'de> {
    variant: &'de str,
    value: Option<&'de Node<'de>>,
}

impl<'de> EnumAccess<'de> for EnumRef<'de> {
    type Error = Error;
    type Variant = VariantRef<'de>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, VariantRef<'de>), Error> {
        let variant: StrDeserializer<'_, Error> = self.variant.into_deserializer();
        seed.deserialize(variant)
            .map(|v| (v, VariantRef { value: self.value }))
    }
}

struct VariantRef<'de> {
    value: Option<&'de Node<'de>>,
}

impl<'de> VariantAccess<'de> for VariantRef<'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.value {
            Some(value) => Deserialize::deserialize(value),
            None => Ok(()),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        match self.value {
            Some(value) => seed.deserialize(value),
            None => Err(de::Error::invalid_type(
                Unexpected::UnitVariant,
                &"newtype variant",
            )),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Some(Node::Array(items)) => {
                if items.is_empty() {
                    visitor.visit_unit()
                } else {
                    visit_array(items, visitor)
                }
            }
            Some(other) => Err(de::Error::invalid_type(
                other.unexpected(),
                &"tuple variant",
            )),
            None => Err(de::Error::invalid_type(
                Unexpected::UnitVariant,
                &"tuple variant",
            )),
        }
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            Some(Node::Object(entries)) => visit_object(entries, visitor),
            Some(other) => Err(de::Error::invalid_type(
                other.unexpected(),
                &"struct variant",
            )),
            None => Err(de::Error::invalid_type(
                Unexpected::UnitVariant,
                &"struct variant",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::check_shape;
    use crate::{Envelope, EnvelopeRef, EventType};
    use proptest::prelude::*;
    use serde_json::{json, Value};

    /// The sample envelopes of the quickstart: eleven types, real shapes.
    const QUICKSTART: &str = include_str!("../../examples/quickstart.jsonl");

    fn samples() -> Vec<Value> {
        QUICKSTART
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// A JSON document as text, objects as lists so that keys can repeat.
    #[derive(Clone, Debug)]
    enum Doc {
        Null,
        Bool(bool),
        Int(i64),
        Float(f64),
        Str(String),
        Array(Vec<Doc>),
        Object(Vec<(String, Doc)>),
    }

    impl Doc {
        fn text(&self, out: &mut String) {
            match self {
                Doc::Null => out.push_str("null"),
                Doc::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                Doc::Int(i) => out.push_str(&i.to_string()),
                Doc::Float(f) => out.push_str(&serde_json::to_string(f).unwrap()),
                Doc::Str(s) => out.push_str(&serde_json::to_string(s).unwrap()),
                Doc::Array(items) => {
                    out.push('[');
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        item.text(out);
                    }
                    out.push(']');
                }
                Doc::Object(entries) => {
                    out.push('{');
                    for (i, (k, v)) in entries.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(&serde_json::to_string(k).unwrap());
                        out.push(':');
                        v.text(out);
                    }
                    out.push('}');
                }
            }
        }
    }

    /// Keys and strings from a small alphabet (so keys repeat and sort
    /// against each other), with escapes and characters on both sides of
    /// the UTF-16 order's one turn (U+E000-U+FFFF against U+10000 up).
    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec![
                "a",
                "b",
                "name",
                "kind",
                "\"",
                "\\",
                "\n",
                "é",
                "\u{e000}",
                "\u{ffff}",
                "\u{10000}",
                "\u{1f600}",
                "~",
            ]),
            0..4,
        )
        .prop_map(|parts| parts.concat())
    }

    fn doc() -> impl Strategy<Value = Doc> {
        let leaf = prop_oneof![
            Just(Doc::Null),
            any::<bool>().prop_map(Doc::Bool),
            any::<i64>().prop_map(Doc::Int),
            (-1e6f64..1e6).prop_map(Doc::Float),
            text().prop_map(Doc::Str),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Doc::Array),
                prop::collection::vec((text(), inner), 0..6).prop_map(Doc::Object),
            ]
        })
    }

    fn is_canonical(node: &Node<'_>) -> bool {
        match node {
            Node::Array(items) => items.iter().all(is_canonical),
            Node::Object(entries) => {
                entries.is_sorted_by(|a, b| key_order(&a.0, &b.0).is_lt())
                    && entries.iter().all(|(_, v)| is_canonical(v))
            }
            _ => true,
        }
    }

    proptest! {
        /// The byte comparison with its one turn is UTF-16 order.
        #[test]
        fn key_order_is_utf16_order(a in text(), b in text(), x in any::<String>(), y in any::<String>()) {
            for (a, b) in [(&a, &b), (&x, &y), (&a, &x)] {
                prop_assert_eq!(key_order(a, b), a.encode_utf16().cmp(b.encode_utf16()));
            }
        }

        /// A node holds the value serde_json reads from the same text
        /// (the last of repeated keys), keys unique and in order, and its
        /// lookups find what `Value`'s find.
        #[test]
        fn a_node_reads_what_a_value_reads(doc in doc()) {
            let mut t = String::new();
            doc.text(&mut t);
            let node: Node = serde_json::from_str(&t).unwrap();
            let value: Value = serde_json::from_str(&t).unwrap();
            prop_assert_eq!(node.to_value(), value.clone());
            prop_assert!(is_canonical(&node));
            if let Value::Object(map) = &value {
                for k in map.keys() {
                    prop_assert_eq!(node.get(k).map(Node::to_value), map.get(k).cloned());
                }
            }
            prop_assert!(node.get("not a key of the alphabet").is_none());
            // Deserializing either one gives the same value back.
            prop_assert_eq!(Value::deserialize(&node).unwrap(), value);
        }

        /// Every `data` shape accepts a document read as a node exactly when
        /// it accepts it read as a value, and reads the same from it; the
        /// documents are the quickstart's, with one member replaced.
        #[test]
        fn shapes_read_nodes_as_they_read_values(
            pick in any::<prop::sample::Index>(),
            at in any::<prop::sample::Index>(),
            with in doc(),
        ) {
            let samples = samples();
            let mut env = samples[pick.index(samples.len())].clone();
            replace_one(&mut env["data"], at, &with);
            let kind: EventType = serde_json::from_value(env["type"].clone()).unwrap();
            let text = env["data"].to_string();
            let node: Node = serde_json::from_str(&text).unwrap();
            let value = &env["data"];
            prop_assert_eq!(
                check_shape(kind, &node).is_ok(),
                check_shape(kind, value).is_ok(),
                "{} {}", kind, text
            );
            same_reading(kind, &node, value)?;
            // And the envelope: the borrowed reading is taken only when
            // the whole one succeeds, with the same fields.
            let line = env.to_string();
            let whole = Envelope::parse(line.as_bytes());
            if let Some(borrowed) = EnvelopeRef::parse(line.as_bytes()) {
                let whole = whole.unwrap();
                prop_assert_eq!(borrowed.header(), whole.header());
                prop_assert_eq!(borrowed.data.to_value(), whole.data);
            }
        }
    }

    /// Replaces one member (chosen by `at`, the root included) with `with`.
    fn replace_one(v: &mut Value, at: prop::sample::Index, with: &Doc) {
        fn paths(v: &Value, here: String, out: &mut Vec<String>) {
            out.push(here.clone());
            match v {
                Value::Object(m) => {
                    for (k, c) in m {
                        let k = k.replace('~', "~0").replace('/', "~1");
                        paths(c, format!("{here}/{k}"), out);
                    }
                }
                Value::Array(a) => {
                    for (i, c) in a.iter().enumerate() {
                        paths(c, format!("{here}/{i}"), out);
                    }
                }
                _ => {}
            }
        }
        let mut all = Vec::new();
        paths(v, String::new(), &mut all);
        let path = &all[at.index(all.len())];
        let mut t = String::new();
        with.text(&mut t);
        if let Some(slot) = v.pointer_mut(path) {
            *slot = serde_json::from_str(&t).unwrap();
        }
    }

    /// The owned shape of `kind` reads the same from both trees.
    fn same_reading(kind: EventType, node: &Node<'_>, value: &Value) -> Result<(), TestCaseError> {
        use crate::data::*;
        fn same<T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(
            node: &Node<'_>,
            value: &Value,
        ) -> Result<(), TestCaseError> {
            let a = T::deserialize(node).ok();
            let b = T::deserialize(value).ok();
            prop_assert_eq!(a, b);
            Ok(())
        }
        match kind {
            EventType::ObjectObserved => same::<KubeObject>(node, value),
            EventType::ObjectDeleted => same::<ObjectDeleted>(node, value),
            EventType::AppDeclared => same::<AppDeclared>(node, value),
            EventType::AppSync => same::<AppSync>(node, value),
            EventType::AppHealth => same::<AppHealth>(node, value),
            EventType::AppInventory => same::<AppInventory>(node, value),
            EventType::ClusterRegistered | EventType::ClusterUpdated => {
                same::<ClusterInfo>(node, value)
            }
            EventType::ClusterCredentialIssued | EventType::ClusterCredentialRevoked => {
                same::<ClusterCredential>(node, value)
            }
            EventType::ClusterHeartbeat => same::<ClusterHeartbeat>(node, value),
            EventType::ControlplaneBackup => same::<ControlplaneBackup>(node, value),
            EventType::ControllerMetrics => same::<ControllerMetrics>(node, value),
            _ => Ok(()),
        }
    }

    #[test]
    fn every_quickstart_envelope_is_read_through_a_borrow() {
        let mut n = 0;
        for line in QUICKSTART.lines() {
            let borrowed = EnvelopeRef::parse(line.as_bytes());
            assert!(borrowed.is_some(), "{line}");
            n += 1;
        }
        assert_eq!(n, samples().len());
    }

    #[test]
    fn invalid_envelopes_are_not_read_through_a_borrow() {
        let base = samples()[0].clone();
        let mut cases = Vec::new();
        for (key, v) in [
            ("schema", json!("annal.event/v0")),
            ("id", json!(" ")),
            ("cluster", json!("")),
            ("colour", json!("blue")),
            ("time", json!("yesterday")),
            ("data", json!(null)),
            // An escaped header string: valid, but the whole reading's.
            ("id", json!("quote\"d")),
        ] {
            let mut e = base.clone();
            e[key] = v;
            cases.push(e);
        }
        for e in cases {
            let line = e.to_string();
            assert!(EnvelopeRef::parse(line.as_bytes()).is_none(), "{line}");
        }
        // A repeated top-level key is an error either way.
        let line = QUICKSTART.lines().next().unwrap();
        let repeated = format!("{{\"id\":\"x\",{}", &line[1..]);
        assert!(Envelope::parse(repeated.as_bytes()).is_err());
        assert!(EnvelopeRef::parse(repeated.as_bytes()).is_none());
    }

    #[test]
    fn numbers_keys_and_enums_read_as_from_a_value() {
        let text = r#"{"u": 18446744073709551615, "i": -5, "f": 1.5, "e": 1e400, "s": "x"}"#;
        // (1e400 is out of range: both readers refuse it.)
        assert!(serde_json::from_str::<Node>(text).is_err());
        assert!(serde_json::from_str::<Value>(text).is_err());
        let text = r#"{"u": 18446744073709551615, "i": -5, "f": 1.5, "s": "x", "n": null}"#;
        let node: Node = serde_json::from_str(text).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        #[derive(Debug, PartialEq, Deserialize)]
        struct Numbers {
            u: u64,
            i: i8,
            f: f32,
            s: Option<String>,
            n: Option<u8>,
        }
        assert_eq!(
            Numbers::deserialize(&node).unwrap(),
            Numbers::deserialize(&value).unwrap()
        );
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Wrong {
            u: u8,
        }
        assert_eq!(
            Wrong::deserialize(&node).unwrap_err().to_string(),
            Wrong::deserialize(&value).unwrap_err().to_string()
        );
        #[derive(Debug, PartialEq, Deserialize)]
        enum Shape {
            Unit,
            New(u8),
            Pair(u8, u8),
            Named { a: u8 },
        }
        for text in [
            r#""Unit""#,
            r#"{"New": 3}"#,
            r#"{"Pair": [1, 2]}"#,
            r#"{"Named": {"a": 1}}"#,
            r#"{"Unit": null, "New": 1}"#,
            r#"{"Other": 1}"#,
            "7",
        ] {
            let node: Node = serde_json::from_str(text).unwrap();
            let value: Value = serde_json::from_str(text).unwrap();
            let a = Shape::deserialize(&node).map_err(|e| e.to_string());
            let b = Shape::deserialize(&value).map_err(|e| e.to_string());
            assert_eq!(a, b, "{text}");
        }
    }
}
