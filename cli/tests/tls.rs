//! `annal serve --tls-cert/--tls-key`: HTTPS over real loopback with a
//! self-signed certificate, a client that trusts only that certificate,
//! tokens checked inside TLS, and plain HTTP refused on the TLS port.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use rustls::pki_types::ServerName;

use crate::util::*;

const INGEST: &str = "ingest-0123456789abcdef";

/// One HTTPS request to `addr`, trusting only `ca` (DER); returns the
/// status and the body.
fn https(
    addr: &str,
    ca: &[u8],
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, String) {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.to_vec().into()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, TcpStream::connect(addr).unwrap());
    let text = request_text("localhost", method, path, token, None, body);
    tls.write_all(text.as_bytes()).unwrap();
    let mut response = String::new();
    // A server may close without close_notify after `Connection: close`.
    let _ = tls.read_to_string(&mut response);
    (status_of(&response), body_of(&response))
}

#[test]
fn serve_speaks_https_with_the_given_certificate_and_checks_tokens_inside_it() {
    let l = Ledger::new();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = l.file("cert.pem", &certified.cert.pem());
    let key = l.file("key.pem", &certified.key_pair.serialize_pem());
    let tokens = l.file("tokens", &format!("ingest {INGEST}\n"));
    let mut server = Server::start(
        &l,
        &[
            "--tokens",
            path_str(&tokens),
            "--tls-cert",
            path_str(&cert),
            "--tls-key",
            path_str(&key),
        ],
    );
    let addr = server.addr.clone();
    let ca = certified.cert.der().to_vec();

    assert_eq!(https(&addr, &ca, "GET", "/healthz", None, "").0, 200);
    assert_eq!(https(&addr, &ca, "POST", "/v1/events", None, "").0, 401);
    let (status, body) = https(
        &addr,
        &ca,
        "POST",
        "/v1/events",
        Some(INGEST),
        &envelopes("tls", 3),
    );
    assert_eq!(status, 200, "{body}");
    let counts: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(counts["appended"], 3);

    // Plain HTTP on the TLS port gets no HTTP answer.
    let mut plain = TcpStream::connect(&addr).unwrap();
    write!(
        plain,
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(
        !answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );

    assert!(server.terminate().success());
    assert_eq!(l.size(), 3);
}

#[test]
fn a_key_that_is_not_pem_is_a_usage_error_naming_the_files() {
    let l = Ledger::new();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = l.file("cert.pem", &certified.cert.pem());
    let key = l.file("key.pem", "not a key\n");
    let out = l.run(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--tls-cert",
        path_str(&cert),
        "--tls-key",
        path_str(&key),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("key.pem"), "{}", stderr(&out));
}
