//! `annal`: a thin shell over the annal crates.
//!
//! `main` parses the arguments, runs one command and maps its outcome to the
//! documented exit codes in one place ([`exit::Exit`]).

mod args;
mod auth;
mod cmd;
mod exit;
mod output;
mod routes;
mod server;
mod ui;

use std::process::ExitCode;

use clap::Parser;

/// Ingest allocates a JSON tree per event on one thread and frees it on
/// another; glibc's allocator spends more time on that than on parsing.
/// mimalloc 2 without transparent huge pages (the workspace's features):
/// mimalloc 3 returned freed pages to the kernel and took them back
/// zeroed, a third of a scan's CPU in `clear_page_erms`; v2 ingests as
/// fast with 40 MB less at 1M, and scans twice as fast as v3 did.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = args::Cli::parse();
    match cmd::run(args) {
        Ok(exit) => exit.into(),
        Err(err) => exit::report(&err).into(),
    }
}
