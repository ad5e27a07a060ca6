//! Secrets never reach the ledger: unique random secret values go in
//! through every path (Secret objects, embedded config, audit bodies, an
//! Argo CD cluster Secret, quarantined records) and none of them, nor its
//! base64 form, occurs in any byte under the data directory or in any
//! output the CLI prints afterwards.

use base64::Engine;
use rand::Rng;

use crate::util::*;

fn secret(rng: &mut impl Rng, tag: &str) -> String {
    let n: u128 = rng.random();
    format!("{tag}-{n:032x}")
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

#[test]
fn no_secret_value_reaches_any_byte_of_the_ledger_or_its_outputs() {
    let mut rng = rand::rng();
    let s: Vec<String> = (0..12)
        .map(|i| secret(&mut rng, &format!("s{i}")))
        .collect();
    let l = Ledger::new();

    // Objects: a Secret (data, stringData, last-applied) and a ConfigMap
    // with credentials embedded in a config string.
    let last_applied = format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"data\":{{\"pw\":\"{}\"}}}}",
        b64(&s[2])
    );
    let objects = format!(
        r#"apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: shop
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{last_applied}'
data:
  password: {}
stringData:
  token: {}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: notifier
  namespace: shop
data:
  service.slack: |
    token: {}
    channel: ops
  client.pem: |
    -----BEGIN RSA PRIVATE KEY-----
    {}
    -----END RSA PRIVATE KEY-----
"#,
        b64(&s[0]),
        s[1],
        s[3],
        s[4]
    );
    let f = l.file("objects.yaml", &objects);
    let out = l.run(&["ingest", "--cluster", "c1", path_str(&f)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // Audit: a Secret create at RequestResponse level, and a header-like
    // annotation with a bearer token.
    let audit = format!(
        r#"{{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"r1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/shop/secrets","verb":"create","user":{{"username":"alice"}},"objectRef":{{"resource":"secrets","namespace":"shop","name":"api","apiVersion":"v1"}},"responseStatus":{{"metadata":{{}},"code":201}},"requestObject":{{"kind":"Secret","apiVersion":"v1","metadata":{{"name":"api","namespace":"shop"}},"stringData":{{"key":"{}"}}}},"responseObject":{{"kind":"Secret","apiVersion":"v1","metadata":{{"name":"api","namespace":"shop","annotations":{{"note":"Bearer {}"}}}},"data":{{"key":"{}"}}}},"stageTimestamp":"2026-11-01T10:00:00Z"}}"#,
        s[5],
        s[6],
        b64(&s[5])
    );
    let f = l.file("audit.jsonl", &(audit + "\n"));
    let out = l.run(&["ingest", "--cluster", "c1", path_str(&f)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // Argo CD cluster Secret, base64 `data` form.
    let config = format!(
        r#"{{"bearerToken":"{}","tlsClientConfig":{{"keyData":"{}","insecure":false}}}}"#,
        s[7], s[8]
    );
    let cluster = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: c2-secret\n  labels:\n    argocd.argoproj.io/secret-type: cluster\ndata:\n  name: {}\n  server: {}\n  config: {}\n",
        b64("c2"),
        b64("https://c2.example.com"),
        b64(&config)
    );
    let f = l.file("cluster.yaml", &cluster);
    let out = l.run(&["ingest", "--cluster", "hub", path_str(&f)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // Rejected input: one record that does not parse, one that parses but
    // is invalid; both land in quarantine.
    let bad = format!(
        "{{\"kind\": \"Secret\", \"apiVersion\": \"v1\", \"password\": \"{}\",}}\n{{\"auditID\": \"x\", \"verb\": \"create\", \"responseStatus\": {{\"code\": \"oops\"}}, \"responseObject\": {{\"kind\": \"Secret\", \"apiVersion\": \"v1\", \"metadata\": {{\"name\": \"q\"}}, \"data\": {{\"k\": \"{}\"}}}}}}\n",
        s[9], s[10]
    );
    let f = l.file("bad.jsonl", &bad);
    let out = l.run(&["ingest", "--cluster", "c1", path_str(&f)]);
    assert_eq!(out.status.code(), Some(2), "both records are rejected");
    let messages = stderr(&out);

    let (_, size) = l.json(&["status"]);
    assert!(size["size"].as_u64().unwrap() >= 6, "{size}");

    // Every byte under the data directory.
    let mut haystack: Vec<(String, Vec<u8>)> = Vec::new();
    let mut stack = vec![l.data()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                haystack.push((path.display().to_string(), std::fs::read(&path).unwrap()));
            }
        }
    }
    // Every output.
    for args in [
        vec!["log", "-o", "json"],
        vec!["objects", "--cluster", "c1", "-o", "json"],
        vec!["quarantine", "list", "-o", "json"],
        vec!["status", "-o", "json"],
        vec!["sql", "SELECT * FROM events", "-o", "json"],
        vec!["sql", "SELECT * FROM events", "-o", "csv"],
    ] {
        let out = l.run(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        haystack.push((format!("annal {}", args.join(" ")), out.stdout));
    }
    let (_, list) = l.json(&["quarantine", "list"]);
    for row in list.as_array().unwrap() {
        let id = row["id"].as_str().unwrap();
        let out = l.run(&["quarantine", "show", id, "-o", "json"]);
        haystack.push((format!("annal quarantine show {id}"), out.stdout));
    }
    haystack.push(("ingest stderr".into(), messages.into_bytes()));
    assert!(haystack.len() > 10);

    for value in &s[..11] {
        for needle in [value.clone(), b64(value)] {
            for (name, bytes) in &haystack {
                assert!(
                    !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
                    "secret {needle} found in {name}"
                );
            }
        }
    }
    // The fingerprints are there instead: an auditor can match a token.
    let fp = annal_fingerprint(&s[7]);
    assert!(
        haystack
            .iter()
            .any(|(_, bytes)| bytes.windows(fp.len()).any(|w| w == fp.as_bytes())),
        "cluster credential fingerprint recorded in the log"
    );
}

fn annal_fingerprint(s: &str) -> String {
    format!("blake3:{}", blake3::hash(s.as_bytes()).to_hex())
}
