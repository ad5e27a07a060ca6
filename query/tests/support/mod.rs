//! What the query crate's test files share (each file is its own test
//! crate and includes this module).

/// A two-worker runtime, as a query runs under `annal serve`.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}
