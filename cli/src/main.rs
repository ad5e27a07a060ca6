//! `annal`: a thin shell over the annal crates.
//!
//! `main` parses the arguments, runs one command and maps its outcome to the
//! documented exit codes in one place ([`exit::Exit`]).

mod args;
mod auth;
mod cmd;
mod exit;
mod output;
mod server;

use std::process::ExitCode;

use clap::Parser;

/// Ingest allocates a JSON tree per event on one thread and frees it on
/// another; glibc's allocator spends more time on that than on parsing.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = args::Cli::parse();
    match cmd::run(args) {
        Ok(exit) => exit.into(),
        Err(err) => exit::report(&err).into(),
    }
}
