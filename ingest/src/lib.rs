//! Ingest: sources and format adapters that feed Envelope v1 batches into
//! the annal store.
//!
//! The shape follows Vector's sources → transforms → sinks: a source reads
//! bytes and frames them into [`Record`]s (one JSON value with its line),
//! a [`Format`] decodes a record into envelopes, and [`pipeline::run`]
//! batches envelopes into group commits on the [`annal_store::Store`].
//! Records that do not decode are [`Rejected`] with their file, line and
//! reason, and go to the store's quarantine; they never stop the rest of the
//! input.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! # annal_store::Store::init(dir.path(), "annal.example/doc").unwrap();
//! # let store = annal_store::Store::open(dir.path()).unwrap();
//! use annal_ingest::{pipeline, Format, Input};
//! let input = b"{\"schema\":\"annal.event/v1\",\"id\":\"e1\",\"type\":\"controlplane.fenced\",\
//!   \"time\":\"2026-11-01T10:00:00Z\",\"data\":{\"controller\":\"old\"}}\nnot json\n";
//! let summary = pipeline::run(&store, vec![Input::reader("-", &input[..])], Format::Envelope,
//!     &pipeline::Options::default(), &mut ()).unwrap();
//! assert_eq!((summary.appended, summary.rejected), (1, 1));
//! ```
#![deny(missing_docs)]

pub mod document;
mod error;
pub mod formats;
pub mod group_commit;
pub mod manifests;
pub mod pipeline;
mod record;
pub mod redact;
pub mod sources;
mod yaml;

pub use error::{IngestError, Rejected};
pub use formats::{Format, TimeSource};
pub use record::{ListItem, Record, RecordReader, MAX_RECORD_BYTES, STREAM_LIST_BYTES};
pub use sources::Input;
