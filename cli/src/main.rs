//! `annal`: a thin shell over the annal crates.
//!
//! `main` parses the arguments, runs one command and maps its outcome to the
//! documented exit codes in one place ([`exit::Exit`]).

mod allocator;
mod args;
mod auth;
mod cmd;
mod exit;
mod output;
mod server;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    allocator::keep_freed_memory();
    let args = args::Cli::parse();
    match cmd::run(args) {
        Ok(exit) => exit.into(),
        Err(err) => exit::report(&err).into(),
    }
}
