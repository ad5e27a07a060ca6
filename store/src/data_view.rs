//! An event's `data` as the indexes read it, from either tree: the
//! `serde_json::Value` of an envelope read whole (adapters, replays,
//! anything the fast path passed on), or the borrowed [`Node`] of the
//! ingest fast path ([`annal_schemas::EnvelopeRef`]). One set of rules
//! reads both, so the facts of an event cannot depend on how it was read.

use annal_schemas::data::shape;
use annal_schemas::Node;
use serde::Deserialize;
use serde_json::{Number, Value};

/// One value of `data`, as far as the indexes look into it.
pub(crate) enum Seen<'a> {
    Null,
    Bool(bool),
    Number(&'a Number),
    Str(&'a str),
    /// An array, with its length.
    Array(usize),
    /// An object, with its number of keys.
    Object(usize),
}

/// A JSON tree the indexes can read.
pub(crate) trait Data {
    /// The member `key` of an object.
    fn get(&self, key: &str) -> Option<&Self>;
    /// What this value is.
    fn seen(&self) -> Seen<'_>;
    /// The borrowed view of a Kubernetes object, if this is one.
    fn object(&self) -> Option<shape::Object<'_>>;

    /// The string, if this is one.
    fn str(&self) -> Option<&str> {
        match self.seen() {
            Seen::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl Data for Value {
    fn get(&self, key: &str) -> Option<&Self> {
        Value::get(self, key)
    }

    fn seen(&self) -> Seen<'_> {
        match self {
            Value::Null => Seen::Null,
            Value::Bool(b) => Seen::Bool(*b),
            Value::Number(n) => Seen::Number(n),
            Value::String(s) => Seen::Str(s),
            Value::Array(a) => Seen::Array(a.len()),
            Value::Object(o) => Seen::Object(o.len()),
        }
    }

    fn object(&self) -> Option<shape::Object<'_>> {
        shape::Object::deserialize(self).ok()
    }
}

impl Data for Node<'_> {
    fn get(&self, key: &str) -> Option<&Self> {
        Node::get(self, key)
    }

    fn seen(&self) -> Seen<'_> {
        match self {
            Node::Null => Seen::Null,
            Node::Bool(b) => Seen::Bool(*b),
            Node::Number(n) => Seen::Number(n),
            Node::String(s) => Seen::Str(s),
            Node::Array(a) => Seen::Array(a.len()),
            Node::Object(o) => Seen::Object(o.len()),
        }
    }

    fn object(&self) -> Option<shape::Object<'_>> {
        shape::Object::deserialize(self).ok()
    }
}
