//! Secret redaction: secrets are replaced by fingerprints before anything is
//! hashed, stored or quarantined.
//!
//! A fingerprint is `blake3:<64 hex>` of the secret's bytes. It lets an
//! auditor ask "was this revoked token used again?" by hashing the token
//! they hold, without the ledger ever holding it. Key names stay, so the
//! shape of a Secret or a kubeconfig is still visible.
//!
//! What counts as a secret:
//! - every value of a `Secret`'s `data` and `stringData`, and its
//!   `kubectl.kubernetes.io/last-applied-configuration` annotation (which
//!   repeats the data);
//! - anywhere, a string under a key that names a credential (`password`,
//!   `token`, `bearerToken`, `keyData`, `client-key-data`, ...);
//! - anywhere, a string that holds a PEM private key or an
//!   `Authorization: Bearer`/`Basic` value.
//!
//! The rules run on parsed documents. Bytes that do not parse (headed for
//! quarantine) go through [`scrub_text`], a textual best effort.

use annal_schemas::Node;
use serde_json::{Map, Value};

/// The annotation `kubectl apply` keeps the previous manifest in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Prefix of every fingerprint.
pub const FINGERPRINT_PREFIX: &str = "blake3:";

/// The fingerprint of `secret`.
pub fn fingerprint(secret: &[u8]) -> String {
    format!("{FINGERPRINT_PREFIX}{}", blake3::hash(secret).to_hex())
}

/// Whether `s` is already a fingerprint (redaction is idempotent).
pub fn is_fingerprint(s: &str) -> bool {
    s.len() == FINGERPRINT_PREFIX.len() + 64
        && s.starts_with(FINGERPRINT_PREFIX)
        && s[FINGERPRINT_PREFIX.len()..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit())
}

/// Redacts a document in place: Kubernetes Secrets by their rule, and
/// credential-named keys and secret-looking strings anywhere.
pub fn value(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if is_secret_object(map) {
                secret_object(map);
            }
            for (key, child) in map.iter_mut() {
                if is_credential_key(key) {
                    fingerprint_strings(child);
                } else {
                    value(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(value),
        Value::String(s) => {
            if looks_secret(s) {
                *s = fingerprint(s.as_bytes());
            } else if s.contains('\n') && s.contains(':') {
                // Embedded configuration (notification services, Helm
                // values, kubeconfigs in ConfigMaps): scrub credential keys.
                let scrubbed = scrub_text(s.as_bytes());
                if scrubbed != s.as_bytes() {
                    *s = String::from_utf8_lossy(&scrubbed).into_owned();
                }
            }
        }
        _ => {}
    }
}

/// Whether [`value`] would leave a document as it is: no rule has anything
/// to change in it. The ingest fast path reads envelopes into a borrowed
/// [`Node`], which redaction cannot rewrite; it keeps only the clean ones
/// and sends the rest through [`value`]. The same rules, asked rather than
/// applied, so a test can hold the two together: a document this calls
/// clean is one [`value`] does not change.
pub fn is_clean(v: &Node<'_>) -> bool {
    match v {
        Node::Object(entries) => {
            if is_secret_node(v) {
                return false;
            }
            entries.iter().all(|(key, child)| {
                if is_credential_key(key) {
                    holds_only_fingerprints(child)
                } else {
                    is_clean(child)
                }
            })
        }
        Node::Array(items) => items.iter().all(is_clean),
        Node::String(s) => !looks_secret(s) && !scrubs(s),
        _ => true,
    }
}

/// Whether the embedded-configuration rule of [`value`] changes `s`.
fn scrubs(s: &str) -> bool {
    s.contains('\n') && s.contains(':') && scrub_text(s.as_bytes()) != s.as_bytes()
}

/// [`is_secret_object`], of a node.
fn is_secret_node(v: &Node<'_>) -> bool {
    v.get("kind").and_then(Node::as_str) == Some("Secret")
        && v.get("apiVersion")
            .and_then(Node::as_str)
            .is_none_or(|a| a == "v1")
}

/// Whether [`fingerprint_strings`] would leave `v` as it is.
fn holds_only_fingerprints(v: &Node<'_>) -> bool {
    match v {
        Node::String(s) => is_fingerprint(s),
        Node::Number(_) => false,
        Node::Object(entries) => entries.iter().all(|(_, c)| holds_only_fingerprints(c)),
        Node::Array(items) => items.iter().all(holds_only_fingerprints),
        _ => true,
    }
}

/// Redacts a string that carries a JSON document (an Argo CD cluster
/// `config`, a last-applied manifest). Returns the redacted document, or
/// `None` when the text is not JSON (the caller then fingerprints it whole).
pub fn json_text(text: &str) -> Option<Value> {
    let mut doc: Value = serde_json::from_str(text).ok()?;
    value(&mut doc);
    Some(doc)
}

fn is_secret_object(map: &Map<String, Value>) -> bool {
    map.get("kind").and_then(Value::as_str) == Some("Secret")
        && map
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_none_or(|v| v == "v1")
}

fn secret_object(map: &mut Map<String, Value>) {
    for field in ["data", "stringData"] {
        if let Some(data) = map.get_mut(field) {
            fingerprint_strings(data);
        }
    }
    if let Some(Value::Object(annotations)) = map
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    {
        if let Some(last) = annotations.get_mut(LAST_APPLIED) {
            fingerprint_strings(last);
        }
    }
}

/// Replaces every string (and number) below `v` with its fingerprint,
/// keeping map keys.
fn fingerprint_strings(v: &mut Value) {
    match v {
        Value::String(s) if !is_fingerprint(s) => *s = fingerprint(s.as_bytes()),
        Value::Number(n) => *v = Value::String(fingerprint(n.to_string().as_bytes())),
        Value::Object(map) => map.values_mut().for_each(fingerprint_strings),
        Value::Array(items) => items.iter_mut().for_each(fingerprint_strings),
        _ => {}
    }
}

/// Whether a key names a credential: its name compared without case, `-`,
/// `_` and `.`, so `client-key-data`, `clientKeyData` and
/// `CLIENT_KEY_DATA` are one name.
///
/// One `match` (compiled to a switch on the length, then the bytes), not a
/// list compared entry by entry: every key of every document comes here,
/// and the list's thirty comparisons were about 5% of the decoding
/// thread's samples.
fn is_credential_key(key: &str) -> bool {
    // managedFields spell keys `f:password`; their leaves are `{}` and hold
    // nothing, so they need no special case.
    if key.len() > 40 {
        return false;
    }
    let mut folded = [0u8; 40];
    let mut n = 0;
    for b in key.bytes() {
        if b == b'-' || b == b'_' || b == b'.' {
            continue;
        }
        folded[n] = b.to_ascii_lowercase();
        n += 1;
    }
    matches!(
        &folded[..n],
        b"password"
            | b"passwd"
            | b"pass"
            | b"token"
            | b"bearertoken"
            | b"accesstoken"
            | b"refreshtoken"
            | b"idtoken"
            | b"authtoken"
            | b"apitoken"
            | b"apikey"
            | b"clientsecret"
            | b"secretkey"
            | b"secretaccesskey"
            | b"awssecretaccesskey"
            | b"sessiontoken"
            | b"privatekey"
            | b"sshprivatekey"
            | b"keydata"
            | b"certdata"
            | b"clientkey"
            | b"clientkeydata"
            | b"clientcertificate"
            | b"clientcertificatedata"
            | b"tlskey"
            | b"tlscrt"
            | b"auth"
            | b"credentials"
            | b"webhooksecret"
            | b"githubappprivatekey"
    )
}

/// Strings that are secrets whatever key holds them.
fn looks_secret(s: &str) -> bool {
    if s.len() < 8 || is_fingerprint(s) {
        return false;
    }
    let t = s.trim_start();
    t.starts_with("Bearer ")
        || t.starts_with("Basic ")
        // A byte search first: most strings have no '-' at all, and that
        // search is cheaper than a substring search of every string.
        || (s.as_bytes().contains(&b'-') && s.contains("-----BEGIN") && s.contains("PRIVATE KEY"))
}

/// A textual best effort for bytes that do not parse: the value after any
/// credential-named key (`"password": "x"`, `password: x`) and every PEM
/// private key block is replaced by its fingerprint.
pub fn scrub_text(raw: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(raw);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        out.push_str(&scrub_line(line));
    }
    scrub_pem(&out).into_bytes()
}

fn scrub_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    loop {
        // Find `key` then `:` (JSON or YAML), possibly quoted.
        let Some(colon) = rest.find(':') else {
            out.push_str(rest);
            return out;
        };
        let (before, after) = rest.split_at(colon);
        let key = before
            .trim_end()
            .trim_end_matches(['"', '\''])
            .rsplit(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_' || c == '.'))
            .next()
            .unwrap_or("");
        out.push_str(before);
        out.push(':');
        let after = &after[1..];
        if !is_credential_key(key) {
            rest = after;
            continue;
        }
        let trimmed = after.trim_start();
        out.push_str(&after[..after.len() - trimmed.len()]);
        let (value, tail) = match trimmed.chars().next() {
            Some(q @ ('"' | '\'')) => match trimmed[1..].find(q) {
                Some(end) => (&trimmed[1..1 + end], &trimmed[end + 2..]),
                None => (&trimmed[1..], ""),
            },
            _ => {
                let end = trimmed
                    .find([',', '}', '\n', '\r'])
                    .unwrap_or(trimmed.len());
                (
                    trimmed[..end].trim_end(),
                    &trimmed[trimmed[..end].trim_end().len()..],
                )
            }
        };
        if value.is_empty() || value.starts_with(['{', '[', '|', '>']) {
            out.push_str(trimmed);
            return out;
        }
        out.push('"');
        out.push_str(&fingerprint(value.as_bytes()));
        out.push('"');
        rest = tail;
    }
}

fn scrub_pem(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN") {
        let block = &rest[start..];
        let Some(end_marker) = block.find("-----END") else {
            break;
        };
        let end = block[end_marker..]
            .find("-----\n")
            .or_else(|| block[end_marker + 8..].find("-----").map(|e| e + 8))
            .map(|e| end_marker + e + 5)
            .unwrap_or(block.len())
            .min(block.len());
        out.push_str(&rest[..start]);
        let pem = &block[..end];
        if pem.contains("PRIVATE KEY") {
            out.push_str(&fingerprint(pem.as_bytes()));
        } else {
            out.push_str(pem);
        }
        rest = &block[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn secret_data_and_last_applied_become_fingerprints_and_keys_stay() {
        let mut v = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "annotations": {LAST_APPLIED: "{\"data\":{\"pw\":\"aGk=\"}}", "keep": "me"}},
            "data": {"pw": "aGk="}, "stringData": {"token": "t0k3n", "n": 5}});
        value(&mut v);
        assert_eq!(v["data"]["pw"], fingerprint(b"aGk="));
        assert_eq!(v["stringData"]["token"], fingerprint(b"t0k3n"));
        assert_eq!(v["stringData"]["n"], fingerprint(b"5"));
        assert!(is_fingerprint(
            v["metadata"]["annotations"][LAST_APPLIED].as_str().unwrap()
        ));
        assert_eq!(v["metadata"]["annotations"]["keep"], "me");
        let once = v.clone();
        value(&mut v);
        assert_eq!(v, once, "redaction is idempotent");
    }

    #[test]
    fn credential_keys_anywhere_and_secret_looking_strings() {
        let mut v = json!({"kind": "ConfigMap", "data": {"x": 1},
            "config": {"bearerToken": "abc", "tlsClientConfig": {"keyData": "k", "caData": "ca", "insecure": false}},
            "headers": ["Bearer abcdefghij", "plain"],
            "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n",
            "secretName": "visible", "client-key-data": "kd"});
        value(&mut v);
        assert_eq!(v["config"]["bearerToken"], fingerprint(b"abc"));
        assert_eq!(v["config"]["tlsClientConfig"]["keyData"], fingerprint(b"k"));
        assert_eq!(v["config"]["tlsClientConfig"]["caData"], "ca");
        assert_eq!(v["config"]["tlsClientConfig"]["insecure"], false);
        assert!(is_fingerprint(v["headers"][0].as_str().unwrap()));
        assert_eq!(v["headers"][1], "plain");
        assert!(is_fingerprint(v["pem"].as_str().unwrap()));
        assert_eq!(v["secretName"], "visible");
        assert_eq!(v["client-key-data"], fingerprint(b"kd"));
        assert_eq!(v["data"]["x"], 1, "only Secrets lose their data");
        let mut embedded = json!({"service.slack": "token: xoxb-123\nchannel: ops\n"});
        value(&mut embedded);
        let text = embedded["service.slack"].as_str().unwrap();
        assert!(
            !text.contains("xoxb-123") && text.contains("channel: ops"),
            "{text}"
        );
    }

    #[test]
    fn text_scrub_covers_json_yaml_and_pem() {
        let raw = b"{\"password\": \"hunter22\", \"user\": \"bob\",}\ntoken: abc123\n  \"bearerToken\":\"zzz\"\n-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let out = String::from_utf8(scrub_text(raw)).unwrap();
        for secret in ["hunter22", "abc123", "zzz", "AAAA"] {
            assert!(!out.contains(secret), "{secret} left in {out}");
        }
        assert!(out.contains("bob"));
        assert!(out.contains(&fingerprint(b"hunter22")));
    }

    /// Documents built from the names and strings the rules look at.
    fn doc() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n";
        let texts = prop::sample::select(vec![
            "Secret".to_string(),
            "v1".to_string(),
            "apps/v1".to_string(),
            "plain".to_string(),
            "Bearer abcdefghij".to_string(),
            "  Basic dXNlcjpwdw==".to_string(),
            pem.to_string(),
            "a: 1\nb: 2".to_string(),
            "url: x\npassword: hunter2".to_string(),
            "no colon\nhere".to_string(),
            fingerprint(b"s"),
        ]);
        let names = prop::sample::select(vec![
            "kind",
            "apiVersion",
            "data",
            "stringData",
            "metadata",
            "annotations",
            LAST_APPLIED,
            "password",
            "client-key-data",
            "keyData",
            "name",
            "config",
            "x",
        ]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(Value::from),
            texts.prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 5, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((names.clone(), inner), 0..5).prop_map(|kv| {
                    Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
                }),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]

        /// What `is_clean` calls clean, redaction leaves as it is; and a
        /// document redaction leaves alone is called clean unless a rule
        /// fired without changing anything (a Secret with nothing in it).
        #[test]
        fn clean_documents_are_the_ones_redaction_leaves_alone(v in doc()) {
            let text = v.to_string();
            let node: Node = serde_json::from_str(&text).unwrap();
            let mut redacted = v.clone();
            value(&mut redacted);
            if is_clean(&node) {
                proptest::prop_assert_eq!(&redacted, &v);
            } else if redacted == v {
                proptest::prop_assert!(text.contains("Secret"), "{}", text);
            }
        }
    }
}
