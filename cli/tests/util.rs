//! Helpers: a temporary ledger and a way to run `annal` against it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temporary data directory with an initialised ledger.
pub struct Ledger {
    pub dir: tempfile::TempDir,
}

impl Ledger {
    pub fn new() -> Ledger {
        let ledger = Ledger::empty();
        let out = ledger.run(&["init", "--origin", "annal.test/cli"]);
        assert_eq!(out.status.code(), Some(0), "init: {}", stderr(&out));
        ledger
    }

    /// A directory with no ledger in it.
    pub fn empty() -> Ledger {
        Ledger {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn command(&self, args: &[&str]) -> Command {
        // ANNAL_BIN runs a copy of the binary (to loop a test while the
        // tree is being rebuilt).
        let bin = std::env::var("ANNAL_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_annal").into());
        let mut cmd = Command::new(bin);
        cmd.arg("--data").arg(self.data()).args(args);
        cmd.env_remove("ANNAL_DATA");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs with `-o json` and parses stdout.
    pub fn json(&self, args: &[&str]) -> (Option<i32>, serde_json::Value) {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        let out = self.run(&all);
        let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout of {args:?} is not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        (out.status.code(), doc)
    }

    /// Writes `text` to a file in the temp dir and returns its path.
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The first leaf segment file.
    pub fn segment(&self) -> PathBuf {
        self.data().join("log").join(format!("{:020}.jsonl", 0))
    }

    pub fn size(&self) -> u64 {
        let (_, doc) = self.json(&["status"]);
        doc["size"].as_u64().unwrap()
    }
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One valid envelope line.
pub fn envelope(id: &str, cluster: &str, n: u64) -> String {
    serde_json::json!({
        "schema": "annal.event/v1",
        "id": id,
        "type": "cluster.heartbeat",
        "time": "2026-11-01T10:00:00Z",
        "cluster": cluster,
        "data": {"agent": "annal-test", "version": n.to_string()},
    })
    .to_string()
}

/// An Envelope v1 event for a scenario: `cluster` `None` for control-plane
/// events, `actor` `null` for none.
pub fn event(
    id: &str,
    kind: &str,
    time: &str,
    cluster: Option<&str>,
    actor: serde_json::Value,
    data: serde_json::Value,
) -> serde_json::Value {
    let mut e = serde_json::json!({"schema": "annal.event/v1", "id": id, "type": kind,
                                   "time": time, "data": data});
    if let Some(c) = cluster {
        e["cluster"] = serde_json::json!(c);
    }
    if !actor.is_null() {
        e["actor"] = actor;
    }
    e
}

/// A new ledger holding `events` (JSON lines or values), ingested as one
/// file; any rejection fails the test.
pub fn ledger_with<T: std::fmt::Display>(events: &[T]) -> Ledger {
    let l = Ledger::new();
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    let f = l.file("scenario.jsonl", &text);
    let out = l.run(&["ingest", path_str(&f)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    l
}

/// `n` valid envelope lines with ids `prefix-0..`.
pub fn envelopes(prefix: &str, n: u64) -> String {
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&envelope(
            &format!("{prefix}-{i}"),
            &format!("c{}", i % 7),
            i,
        ));
        text.push('\n');
    }
    text
}

/// The address in `annal serve`'s first line ("serving on http://ADDR ..."
/// or https://), which a test must read before it can connect.
pub fn served_address(line: &str, scheme: &str) -> String {
    line.split(&format!("{scheme}://"))
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no {scheme} address in {line:?}"))
        .to_string()
}

/// Reads `annal serve`'s stderr up to the line that names its address
/// (a restart after a crash first says it rebuilds its indexes); returns
/// the address and the lines read, that one included.
pub fn read_to_address(stderr: &mut impl std::io::BufRead, scheme: &str) -> (String, String) {
    let mut read = String::new();
    loop {
        let start = read.len();
        let n = stderr.read_line(&mut read).unwrap();
        let line = &read[start..];
        if n == 0 || line.contains(&format!("{scheme}://")) {
            return (served_address(line, scheme), read);
        }
    }
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The counts of an `ingest -o json` summary (its other keys describe
/// skips and time sources).
pub fn counts(doc: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "appended": doc["appended"],
        "duplicates": doc["duplicates"],
        "rejected": doc["rejected"],
    })
}

/// A child process killed when the test ends, even by a panic.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `annal serve` on a loopback port of its own, killed when dropped; its
/// stderr is kept (and drained, so the server never blocks on it).
pub struct Server {
    pub child: Killed,
    pub addr: String,
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Server {
    /// Starts `annal serve --listen 127.0.0.1:0 ARGS` over `ledger` and
    /// waits for the line that names the address (`https://` when ARGS
    /// give `--tls-cert`).
    pub fn start(ledger: &Ledger, args: &[&str]) -> Server {
        use std::io::BufRead;
        let scheme = if args.contains(&"--tls-cert") {
            "https"
        } else {
            "http"
        };
        let mut all = vec!["serve", "--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let mut child = Killed(
            ledger
                .command(&all)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let mut reader = std::io::BufReader::new(child.0.stderr.take().unwrap());
        let (addr, read) = read_to_address(&mut reader, scheme);
        let log = std::sync::Arc::new(std::sync::Mutex::new(read));
        let kept = log.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                kept.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Server { child, addr, log }
    }

    /// Sends SIGTERM (a graceful stop), without waiting.
    pub fn sigterm(&self) {
        let term = Command::new("kill")
            .args(["-TERM", &self.child.0.id().to_string()])
            .status()
            .unwrap();
        assert!(term.success());
    }

    /// SIGTERM, then the exit status (a clean stop exits 0).
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        self.sigterm();
        self.child.0.wait().unwrap()
    }

    /// SIGKILL, and the process reaped.
    pub fn kill(&mut self) {
        self.child.0.kill().unwrap();
        self.child.0.wait().unwrap();
    }

    /// The value of a Prometheus counter or gauge on `/metrics`.
    pub fn metric(&self, name: &str) -> u64 {
        let (_, text) = self.request("GET", "/metrics", None, "");
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    }

    /// Waits until the metric `name` reads `value` (`what` names the
    /// wait when it runs past 30 s and fails the test).
    pub fn wait_for_metric(&self, name: &str, value: u64, what: &str) {
        let started = std::time::Instant::now();
        while self.metric(name) != value {
            assert!(started.elapsed().as_secs() < 30, "{what}");
            std::thread::yield_now();
        }
    }

    /// What the server wrote to stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Whether the server's stderr comes to hold `needle`: a line written
    /// before an answer reaches this process through a pipe and a reader
    /// thread, so it is waited for (bounded at 10 s).
    pub fn logged(&self, needle: &str) -> bool {
        for _ in 0..200 {
            if self.log().contains(needle) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        false
    }

    /// One HTTP/1.1 request with a text body: (status, body).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: &str,
    ) -> (u16, String) {
        self.request_typed(method, path, token, "text/plain", body)
    }

    /// `POST /v1/sql` with `{"query": ...}`: (status, the JSON answer).
    pub fn sql(&self, token: Option<&str>, query: &str) -> (u16, serde_json::Value) {
        let body = serde_json::json!({ "query": query }).to_string();
        let (status, text) =
            self.request_typed("POST", "/v1/sql", token, "application/json", &body);
        let doc = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{query}: answer is not JSON ({e}): {text}"));
        (status, doc)
    }

    /// One HTTP/1.1 request: (status, body).
    pub fn request_typed(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        content_type: &str,
        body: &str,
    ) -> (u16, String) {
        http(&self.addr, method, path, token, content_type, body)
    }

    /// Resident memory of the server process, from /proc, in bytes.
    pub fn rss_bytes(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.child.0.id())).unwrap();
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap();
        kib * 1024
    }
}

/// The text of one HTTP/1.1 request that closes its connection.
pub fn request_text(
    host: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    content_type: Option<&str>,
    body: &str,
) -> String {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let content_type = content_type
        .map(|t| format!("Content-Type: {t}\r\n"))
        .unwrap_or_default();
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{auth}{content_type}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The status of a whole HTTP/1.1 response (0 when it has none).
pub fn status_of(response: &str) -> u16 {
    response
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The body of a whole HTTP/1.1 response.
pub fn body_of(response: &str) -> String {
    response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

/// The body of a whole HTTP/1.1 response, as JSON.
pub fn body_json(response: &str) -> serde_json::Value {
    serde_json::from_str(&body_of(response))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {response}"))
}

/// One HTTP/1.1 request to `addr` without a content type: (status, the
/// whole response, headers included).
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, String) {
    exchange(addr, &request_text(addr, method, path, token, None, body))
}

/// Sends `text` to `addr` and reads the whole response: (status, it).
pub fn exchange(addr: &str, text: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.write_all(text.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = status_of(&response);
    assert_ne!(status, 0, "no HTTP status in {response:?}");
    (status, response)
}

/// One HTTP/1.1 request to `addr`: (status, body).
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    content_type: &str,
    body: &str,
) -> (u16, String) {
    let text = request_text(addr, method, path, token, Some(content_type), body);
    let (status, response) = exchange(addr, &text);
    (status, body_of(&response))
}

/// Copies a directory tree (a ledger, a fixture).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
