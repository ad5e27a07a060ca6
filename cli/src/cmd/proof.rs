//! `annal proof inclusion|consistency`: RFC 6962/9162 proofs as JSON, each
//! with the signed checkpoint it is against (`tools/verify_proof.py`
//! checks them without annal).

use annal_query::proof::{self, Against, Leaf};
use annal_store::Store;
use anyhow::Context;

use crate::args::{ConsistencyArgs, InclusionArgs, ProofCommand};
use crate::exit::Exit;

pub fn run(store: &Store, command: ProofCommand) -> anyhow::Result<Exit> {
    let doc = match command {
        ProofCommand::Inclusion(args) => inclusion(store, args)?,
        ProofCommand::Consistency(args) => consistency(store, args)?,
    };
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(Exit::Ok)
}

fn inclusion(store: &Store, args: InclusionArgs) -> anyhow::Result<serde_json::Value> {
    let leaf = match (args.index, args.event_id) {
        (Some(i), _) => Leaf::Index(i),
        (None, Some(id)) => Leaf::EventId(id),
        (None, None) => unreachable!("clap requires --index or --event-id"),
    };
    let against = match (args.checkpoint, args.size) {
        (Some(path), _) => Against::Note(read_checkpoint(&path)?),
        (None, Some(size)) => Against::Size(size),
        (None, None) => Against::Latest,
    };
    Ok(proof::inclusion(store, &leaf, &against)?)
}

fn consistency(store: &Store, args: ConsistencyArgs) -> anyhow::Result<serde_json::Value> {
    let from = match (args.from_checkpoint, args.from) {
        (Some(path), _) => Against::Note(read_checkpoint(&path)?),
        (None, Some(size)) => Against::Size(size),
        (None, None) => unreachable!("clap requires --from or --from-checkpoint"),
    };
    let to = args.to.map_or(Against::Latest, Against::Size);
    Ok(proof::consistency(store, &from, &to)?)
}

/// A saved checkpoint file; unreadable is an input error (exit 2).
pub(super) fn read_checkpoint(path: &std::path::Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path)
        .with_context(|| format!("reading the checkpoint {}", path.display()))
        .map_err(|e| crate::exit::UsageError(format!("{e:#}")).into())
}
