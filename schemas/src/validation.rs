//! Validation errors that point at the failing field.

use std::fmt;

/// Why a record is not a valid Envelope v1.
///
/// `path` is the dotted JSON path of the offending field (`data.metadata.name`,
/// `cluster`; empty when the record as a whole is wrong). Sources wrap it with
/// the file and line it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationError {
    /// Dotted JSON path of the field at fault; empty for the whole record.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl ValidationError {
    /// A new error at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        ValidationError {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "field `{}`: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ValidationError {}

#[cfg(test)]
mod tests {
    use crate::Envelope;

    fn parse(json: &str) -> Result<Envelope, crate::ValidationError> {
        Envelope::parse(json.as_bytes())
    }

    const HEAD: &str =
        r#""schema":"annal.event/v1","id":"e1","time":"2026-11-01T10:00:00Z","cluster":"c1""#;

    #[test]
    fn unknown_top_level_field_is_rejected_with_its_name() {
        let err = parse(&format!(
            r#"{{{HEAD},"type":"cluster.heartbeat","clutser":"x","data":{{"agent":"a"}}}}"#
        ))
        .unwrap_err();
        assert!(err.message.contains("clutser"), "{err}");
    }

    #[test]
    fn unknown_fields_inside_kubernetes_objects_are_kept() {
        let env = parse(&format!(
            r#"{{{HEAD},"type":"object.observed","data":{{"apiVersion":"v1","kind":"ConfigMap",
            "metadata":{{"name":"cm","generation":3}},"data":{{"k":"v"}},"x-vendor":true}}}}"#
        ))
        .unwrap();
        let obj: crate::data::KubeObject = serde_json::from_value(env.data.clone()).unwrap();
        assert_eq!(obj.extra["x-vendor"], true);
        assert_eq!(obj.metadata.extra["generation"], 3);
        assert_eq!(env.data["data"]["k"], "v");
    }

    #[test]
    fn nested_errors_name_the_data_path() {
        let err = parse(&format!(
            r#"{{{HEAD},"type":"object.observed","data":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":7}}}}}}"#
        ))
        .unwrap_err();
        assert_eq!(err.path, "data.metadata.name");

        let err = parse(&format!(
            r#"{{{HEAD},"type":"app.inventory","data":{{"app":"argocd:a","entries":[{{"kind":"Pod"}}]}}}}"#
        ))
        .unwrap_err();
        assert_eq!(err.path, "data.entries[0]");
        assert!(err.message.contains("name"), "{err}");

        let err = parse(&format!(
            r#"{{{HEAD},"type":"app.health","data":{{"app":"argocd:a","status":"Fine"}}}}"#
        ))
        .unwrap_err();
        assert_eq!(err.path, "data.status");
    }

    #[test]
    fn cluster_is_required_where_the_type_needs_it() {
        let err = parse(
            r#"{"schema":"annal.event/v1","id":"e","type":"app.health","time":"2026-11-01T10:00:00Z","data":{"app":"a","status":"Healthy"}}"#,
        )
        .unwrap_err();
        assert_eq!(err.path, "cluster");
        parse(
            r#"{"schema":"annal.event/v1","id":"e","type":"controlplane.fenced","time":"2026-11-01T10:00:00Z","data":{"controller":"argocd-old"}}"#,
        )
        .unwrap();
    }

    #[test]
    fn schema_tag_time_and_id_are_checked() {
        let err = parse(
            r#"{"schema":"annal.event/v2","id":"e","type":"controlplane.fenced","time":"2026-11-01T10:00:00Z","data":{"controller":"c"}}"#,
        )
        .unwrap_err();
        assert_eq!(err.path, "schema");
        let err = parse(
            r#"{"schema":"annal.event/v1","id":"e","type":"controlplane.fenced","time":"yesterday","data":{"controller":"c"}}"#,
        )
        .unwrap_err();
        assert_eq!(err.path, "time");
        let err = parse(
            r#"{"schema":"annal.event/v1","id":" ","type":"controlplane.fenced","time":"2026-11-01T10:00:00Z","data":{"controller":"c"}}"#,
        )
        .unwrap_err();
        assert_eq!(err.path, "id");
        let err =
            parse(r#"{"schema":"annal.event/v1","id":"e","type":"object.created"}"#).unwrap_err();
        assert_eq!(err.path, "type");
    }
}

#[cfg(test)]
mod syntax_tests {
    #[test]
    fn syntax_errors_say_invalid_json_with_a_record_relative_position() {
        let err = crate::Envelope::parse(b"not json").unwrap_err();
        assert_eq!(err.path, "");
        assert!(err.message.starts_with("invalid JSON: "), "{err}");
        assert!(err.message.ends_with("(column 2)"), "{err}");
        let err = crate::Envelope::parse(b"{\"schema\":").unwrap_err();
        assert!(err.message.starts_with("invalid JSON: EOF"), "{err}");
    }
}
