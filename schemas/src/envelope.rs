//! The Envelope v1 record.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::data::check_shape;
use crate::{EventType, Node, Timestamp, ValidationError};

/// The only accepted value of `schema`.
pub const SCHEMA_V1: &str = "annal.event/v1";

/// Longest accepted idempotency key, in bytes. Ids are index keys; a bound
/// keeps a hostile producer from bloating the id index.
const MAX_ID_LEN: usize = 512;

/// One canonical annal event (DESIGN.md, "Envelope v1").
///
/// Unknown top-level fields are an error: a misspelt `cluster` must not turn
/// into an event that silently belongs to no cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// Always [`SCHEMA_V1`].
    pub schema: String,
    /// Idempotency key: the same id is stored once.
    pub id: String,
    /// What happened.
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// Valid time: when it happened in the world.
    pub time: Timestamp,
    /// Stable cluster id; required for `object.*`, `app.*` and `cluster.*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// Free text: where the event came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Who caused it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<Actor>,
    /// The type-specific payload (see [`crate::data`]).
    pub data: Value,
}

/// An envelope read through a borrow: the fields as [`Envelope`] has them,
/// `data` as a [`Node`] whose strings point into the input.
///
/// The ingest fast path: an envelope read so is encoded and indexed
/// without ever being copied into a `serde_json::Value`. It takes only
/// what it can take without doubt; anything else (an escaped header
/// string, a failed rule) is read again as an [`Envelope`], which explains
/// the error, so errors are never worded from here.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeRef<'a> {
    /// As in [`Envelope`].
    pub schema: &'a str,
    /// As in [`Envelope`].
    pub id: &'a str,
    /// As in [`Envelope`].
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// As in [`Envelope`].
    pub time: Timestamp,
    /// As in [`Envelope`].
    #[serde(default, borrow)]
    pub cluster: Option<&'a str>,
    /// As in [`Envelope`].
    #[serde(default, borrow)]
    pub source: Option<&'a str>,
    /// As in [`Envelope`].
    #[serde(default)]
    pub actor: Option<Actor>,
    /// As in [`Envelope`], borrowed.
    #[serde(borrow)]
    pub data: Node<'a>,
}

/// The fields of an envelope other than `data`, borrowed from either form
/// ([`Envelope::header`], [`EnvelopeRef::header`]): what the rules, the
/// canonical writer and the indexes read besides `data`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Header<'a> {
    /// `schema`
    pub schema: &'a str,
    /// `id`
    pub id: &'a str,
    /// `type`
    pub event_type: EventType,
    /// `time`
    pub time: Timestamp,
    /// `cluster`
    pub cluster: Option<&'a str>,
    /// `source`
    pub source: Option<&'a str>,
    /// `actor`
    pub actor: Option<&'a Actor>,
}

/// The fields of an [`Envelope`] other than `data`, deserialized on their
/// own by [`Envelope::from_value`]. Named and shaped like `Envelope` so that
/// serde's messages ("unknown field `x`, expected one of ...", "invalid type:
/// ..., expected struct Envelope") read exactly as they would for it.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    rename = "Envelope",
    expecting = "struct Envelope"
)]
struct OwnedHeader {
    schema: String,
    id: String,
    #[serde(rename = "type")]
    event_type: EventType,
    time: Timestamp,
    #[serde(default)]
    cluster: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    actor: Option<Actor>,
    /// Never present here (moved out before); declared so that the list of
    /// expected fields in an unknown-field message still names `data`.
    #[serde(default)]
    #[allow(dead_code)]
    data: Option<serde::de::IgnoredAny>,
}

/// Who caused an event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Actor {
    /// The authenticated user (audit `user.username`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The user `principal` impersonated (audit `impersonatedUser`): the
    /// identity the request was authorized as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impersonated: Option<String>,
    /// The server-side-apply / update field manager (`?fieldManager=`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_manager: Option<String>,
    /// Controller instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<String>,
    /// Credential fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

impl Envelope {
    /// Parses and validates one envelope from JSON bytes.
    pub fn parse(bytes: &[u8]) -> Result<Envelope, ValidationError> {
        // Path tracking costs a third of parsing, so it only runs to explain
        // a record that failed.
        match serde_json::from_slice::<Envelope>(bytes) {
            Ok(env) => {
                env.validate()?;
                Ok(env)
            }
            Err(_) => Err(Envelope::explain(bytes)),
        }
    }

    /// The error of an envelope that did not parse, with its field path.
    fn explain(bytes: &[u8]) -> ValidationError {
        match Envelope::parse_tracked(bytes) {
            Err(e) => e,
            Ok(_) => ValidationError::new("", "invalid envelope"),
        }
    }

    fn parse_tracked(bytes: &[u8]) -> Result<Envelope, ValidationError> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let env: Envelope = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if inner.is_syntax() || inner.is_eof() {
                ValidationError::new("", format!("invalid JSON: {}", describe(&inner)))
            } else {
                ValidationError::new(root_path(&path), describe(&inner))
            }
        })?;
        de.end().map_err(|e| {
            ValidationError::new(
                "",
                format!("trailing data after the envelope: {}", describe(&e)),
            )
        })?;
        env.validate()?;
        Ok(env)
    }

    /// Parses and validates an envelope already decoded as a JSON value.
    ///
    /// `data` is moved out of the map, not deserialized: going through serde
    /// from a borrowed value rebuilds the whole payload string by string, a
    /// deep copy of every event that cost a third of the decoding thread.
    /// Only the small header goes through serde, with the same error paths
    /// and messages as deserializing the whole [`Envelope`].
    pub fn from_value(value: Value) -> Result<Envelope, ValidationError> {
        let Value::Object(mut fields) = value else {
            // Not an object: nothing to move out, and serde names the error.
            let env: Envelope = deserialize_tracked(&value)?;
            env.validate()?;
            return Ok(env);
        };
        // `shift_remove` keeps the order of the remaining keys, so the first
        // unknown or malformed field reported is the one serde would name.
        let data = fields.shift_remove("data");
        let header_value = Value::Object(fields);
        let header: OwnedHeader = deserialize_tracked(&header_value)?;
        let data = data.ok_or_else(|| ValidationError::new("", "missing field `data`"))?;
        let env = Envelope {
            schema: header.schema,
            id: header.id,
            event_type: header.event_type,
            time: header.time,
            cluster: header.cluster,
            source: header.source,
            actor: header.actor,
            data,
        };
        env.validate()?;
        Ok(env)
    }

    /// Checks the rules serde cannot express: the schema tag, a usable id,
    /// `cluster` where the type needs it, and the shape of `data`.
    pub fn validate(&self) -> Result<(), ValidationError> {
        self.header().check()?;
        check_shape(self.event_type, &self.data).map_err(data_error)
    }

    /// The fields other than `data`.
    pub fn header(&self) -> Header<'_> {
        Header {
            schema: &self.schema,
            id: &self.id,
            event_type: self.event_type,
            time: self.time,
            cluster: self.cluster.as_deref(),
            source: self.source.as_deref(),
            actor: self.actor.as_ref(),
        }
    }
}

impl<'a> EnvelopeRef<'a> {
    /// Reads one envelope from JSON bytes, if it is valid and can be read
    /// through a borrow; `None` sends the caller to [`Envelope::parse`].
    pub fn parse(bytes: &'a [u8]) -> Option<EnvelopeRef<'a>> {
        let env: EnvelopeRef<'a> = serde_json::from_slice(bytes).ok()?;
        env.header().check().ok()?;
        check_shape(env.event_type, &env.data).ok()?;
        Some(env)
    }

    /// The fields other than `data`.
    pub fn header(&self) -> Header<'_> {
        Header {
            schema: self.schema,
            id: self.id,
            event_type: self.event_type,
            time: self.time,
            cluster: self.cluster,
            source: self.source,
            actor: self.actor.as_ref(),
        }
    }
}

impl Header<'_> {
    /// The rules on the fields other than `data`: the schema tag, a usable
    /// id, and `cluster` where the type needs it.
    fn check(&self) -> Result<(), ValidationError> {
        if self.schema != SCHEMA_V1 {
            return Err(ValidationError::new(
                "schema",
                format!("expected {SCHEMA_V1:?}, found {:?}", self.schema),
            ));
        }
        if self.id.trim().is_empty() {
            return Err(ValidationError::new("id", "must not be empty"));
        }
        if self.id.len() > MAX_ID_LEN {
            return Err(ValidationError::new(
                "id",
                format!("is {} bytes, the limit is {MAX_ID_LEN}", self.id.len()),
            ));
        }
        if self.event_type.requires_cluster() && self.cluster.is_none_or(|c| c.trim().is_empty()) {
            return Err(ValidationError::new(
                "cluster",
                format!("is required for {} events", self.event_type),
            ));
        }
        Ok(())
    }
}

/// A `data` shape error, its path put below `data`.
fn data_error((path, message): (String, String)) -> ValidationError {
    let path = if path == "." {
        "data".to_string()
    } else {
        format!("data.{path}")
    };
    ValidationError::new(path, message)
}

/// A serde_json error without its "at line 1 column 7" suffix, with the
/// position restated relative to the record (callers add the file line).
fn describe(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let message = match text.rfind(" at line ") {
        Some(at) => &text[..at],
        None => &text,
    };
    match (e.line(), e.column()) {
        (0, _) => message.to_string(),
        (1, col) => format!("{message} (column {col})"),
        (line, col) => format!("{message} (record line {line}, column {col})"),
    }
}

/// Deserializes `T` from a JSON value, the error naming its field path.
fn deserialize_tracked<'de, T: Deserialize<'de>>(value: &'de Value) -> Result<T, ValidationError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        ValidationError::new(root_path(&path), e.into_inner().to_string())
    })
}

/// serde_path_to_error spells the root as "."; annal spells it as nothing.
fn root_path(path: &str) -> String {
    if path == "." {
        String::new()
    } else {
        path.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The definition `from_value` replaced: the whole envelope, `data`
    /// included, deserialized through serde from a borrowed value.
    fn reference(value: Value) -> Result<Envelope, ValidationError> {
        let env: Envelope = deserialize_tracked(&value)?;
        env.validate()?;
        Ok(env)
    }

    fn outcome(r: Result<Envelope, ValidationError>) -> Result<Envelope, (String, String)> {
        r.map_err(|e| (e.path.clone(), e.message.clone()))
    }

    #[test]
    fn from_value_answers_as_deserializing_the_whole_envelope_does() {
        let valid = json!({"schema": "annal.event/v1", "id": "e1", "type": "object.observed",
            "time": "2024-05-01T10:00:00Z", "cluster": "prod-eu-1", "source": "test",
            "actor": {"principal": "alice", "controller": "argocd"},
            "data": {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "a", "namespace": "default"}}});
        let with = |key: &str, v: Value| {
            let mut d = valid.clone();
            d[key] = v;
            d
        };
        let without = |key: &str| {
            let mut d = valid.clone();
            d.as_object_mut().map(|m| m.shift_remove(key));
            d
        };
        let docs = vec![
            valid.clone(),
            without("data"),
            with("data", Value::Null),
            with("colour", json!("blue")),
            with("actor", json!({"principal": 5})),
            with("actor", json!({"nickname": "al"})),
            with("type", json!("object.created")),
            without("cluster"),
            with("type", json!("app.health")),
            with(
                "data",
                json!({"kind": "ConfigMap", "metadata": {"name": ""}}),
            ),
            without("id"),
            without("schema"),
            with("id", json!(5)),
            with("time", json!("yesterday")),
            json!({"data": {}}),
            json!({}),
            json!([1, 2]),
            json!("envelope"),
            Value::Null,
        ];
        let mut oks = 0;
        for doc in docs {
            let expected = outcome(reference(doc.clone()));
            let got = outcome(Envelope::from_value(doc.clone()));
            assert_eq!(got, expected, "for {doc}");
            oks += usize::from(got.is_ok());
        }
        assert_eq!(oks, 1, "exactly the valid document passes");
    }
}
