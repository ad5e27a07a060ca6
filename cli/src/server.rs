//! A running `annal serve`, as other commands on the same data directory
//! find it.
//!
//! The server writes `DATA/server` (JSON: its process id, the URL it
//! listens on, whether it serves TLS and wants tokens) once it listens, by
//! rename, and removes it when it stops. `annal ingest` beside it (the
//! ledger is locked by that process) sends each input through it instead
//! of failing: the whole file, streamed as one request to
//! `/v1/ingest/FORMAT/stream`, answered after the server's last commit
//! with the summary local ingest would print.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde::{Deserialize, Serialize};

/// The file's name in the data directory.
const FILE: &str = "server";
/// Bytes read from the input per body frame.
const FRAME_BYTES: usize = 256 << 10;

/// What a server publishes.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Published {
    /// The server's process id.
    pub pid: u32,
    /// Where it listens, as a client on this machine reaches it
    /// (`http://127.0.0.1:8080`).
    pub url: String,
    /// Whether it serves TLS.
    pub tls: bool,
    /// Whether it asks for bearer tokens.
    pub tokens: bool,
}

fn path(data: &Path) -> PathBuf {
    data.join(FILE)
}

impl Published {
    /// The record of a server listening on `addr` (an unspecified address
    /// is reached on loopback).
    pub fn new(addr: std::net::SocketAddr, tls: bool, tokens: bool) -> Published {
        let ip = match addr.ip() {
            std::net::IpAddr::V4(ip) if ip.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
            std::net::IpAddr::V6(ip) if ip.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
            ip => ip,
        };
        let scheme = if tls { "https" } else { "http" };
        Published {
            pid: std::process::id(),
            url: format!("{scheme}://{}", std::net::SocketAddr::new(ip, addr.port())),
            tls,
            tokens,
        }
    }

    /// Writes it into `data` (by rename: readers never see half of it).
    pub fn publish(&self, data: &Path) -> anyhow::Result<()> {
        let tmp = data.join("server.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(self)?)
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path(data))
            .with_context(|| format!("writing {}", path(data).display()))
    }

    /// Removes it from `data`, if it is still this process's.
    pub fn withdraw(data: &Path) {
        if Published::read(data).is_some_and(|p| p.pid == std::process::id()) {
            let _ = std::fs::remove_file(path(data));
        }
    }

    /// The server process `pid` published in `data`, if it did.
    pub fn of(data: &Path, pid: u32) -> Option<Published> {
        Published::read(data).filter(|p| p.pid == pid)
    }

    fn read(data: &Path) -> Option<Published> {
        serde_json::from_slice(&std::fs::read(path(data)).ok()?).ok()
    }

    /// `host:port` of a plain-HTTP server.
    fn authority(&self) -> anyhow::Result<&str> {
        match self.url.strip_prefix("http://") {
            Some(a) => Ok(a),
            None => bail!(
                "the server at {} serves TLS, which `annal ingest` cannot send through yet: \
                 POST the file to {}/v1/ingest/FORMAT (curl --cacert CERT --data-binary @FILE)",
                self.url,
                self.url
            ),
        }
    }
}

/// What a server answered.
pub struct Answer {
    pub status: u16,
    pub body: serde_json::Value,
}

/// Streams `input` to `path_and_query` on the server as one POST (chunked:
/// the input is never held whole), with `token` as the bearer token.
pub fn post_stream(
    server: &Published,
    path_and_query: &str,
    token: Option<&str>,
    input: Box<dyn Read + Send>,
) -> anyhow::Result<Answer> {
    let authority = server.authority()?.to_string();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let tcp = tokio::net::TcpStream::connect(&authority)
            .await
            .with_context(|| format!("connecting to the server at {}", server.url))?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await?;
        tokio::spawn(connection);
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(4);
        let reading = std::thread::spawn(move || {
            let mut input = input;
            let mut buf = vec![0u8; FRAME_BYTES];
            loop {
                let frame = match input.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => Ok(Frame::data(Bytes::copy_from_slice(&buf[..n]))),
                    Err(e) => Err(e),
                };
                let failed = frame.is_err();
                if tx.blocking_send(frame).is_err() || failed {
                    return;
                }
            }
        });
        let frames = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|frame| (frame, rx))
        });
        let mut request = hyper::Request::post(path_and_query)
            .header(hyper::header::HOST, &authority)
            .header(hyper::header::CONTENT_TYPE, "application/octet-stream");
        if let Some(t) = token {
            request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let response = sender
            .send_request(request.body(StreamBody::new(frames))?)
            .await
            .with_context(|| format!("sending to the server at {}", server.url))?;
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await?.to_bytes();
        let _ = reading.join();
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| serde_json::json!({"error": String::from_utf8_lossy(&bytes)}));
        Ok(Answer { status, body })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unspecified_address_is_reached_on_loopback_and_only_its_own_file_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let p = Published::new("0.0.0.0:8080".parse().unwrap(), false, true);
        assert_eq!(p.url, "http://127.0.0.1:8080");
        p.publish(dir.path()).unwrap();
        assert_eq!(
            Published::of(dir.path(), std::process::id()),
            Some(p.clone())
        );
        assert_eq!(Published::of(dir.path(), std::process::id() + 1), None);
        let other = Published {
            pid: std::process::id() + 1,
            ..p
        };
        other.publish(dir.path()).unwrap();
        Published::withdraw(dir.path());
        assert!(
            dir.path().join(FILE).exists(),
            "another process's record stays"
        );
        let tls = Published::new("[::]:8443".parse().unwrap(), true, false);
        assert_eq!(tls.url, "https://[::1]:8443");
        assert!(tls.authority().is_err());
    }
}
