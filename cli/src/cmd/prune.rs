//! `annal prune-plan`: what pruning an app would delete, as a CI gate.

use annal_ingest::manifests;
use annal_query::asof::coverage::Stale;
use annal_query::asof::inventory::AsOf;
use annal_query::recovery::prune::{self, Plan, Request};
use annal_schemas::Timestamp;
use annal_store::Store;
use serde_json::{json, Value};

use crate::args::PruneArgs;
use crate::exit::{Exit, UsageError};
use crate::output::{OutputFormat, Printer, Table};

pub fn run(store: &Store, args: &PruneArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let manifests = manifests::read(&args.desired)
        .map_err(|e| UsageError(format!("desired manifests: {e}")))?;
    let desired = manifests
        .into_iter()
        .map(|m| {
            prune::desired_name(
                &m.api_version,
                m.kind,
                m.namespace,
                m.name,
                args.namespace.as_deref(),
            )
        })
        .collect();
    let request = Request {
        app: args.app.clone(),
        cluster: args.cluster.clone(),
        desired,
        max_deletions: args.max_deletions,
        max_fraction: args.max_fraction,
        normal_managers: args.normal_managers.clone(),
    };
    let as_of = AsOf::new(store, args.at.unwrap_or_else(Timestamp::now), args.known_at)?;
    let plan = prune::plan(store, &request, &as_of)?;
    let stale = super::coverage::stale(
        store,
        std::slice::from_ref(&args.cluster),
        &as_of,
        &args.freshness,
        printer,
    )?;
    let approval = plan.needs_approval() || (!stale.is_empty() && !args.allow_stale);
    print(&plan, &stale, approval, printer)?;
    Ok(if approval {
        Exit::NeedsApproval
    } else {
        Exit::Ok
    })
}

fn print(plan: &Plan, stale: &[Stale], approval: bool, printer: &Printer) -> anyhow::Result<()> {
    let flagged = plan.prune.iter().filter(|o| !o.flags.is_empty()).count();
    let verdict = if approval { "needs approval" } else { "safe" };
    let headline = format!(
        "{verdict}: pruning {} on {} deletes {} of {} live objects ({flagged} flagged) and creates {}",
        plan.app,
        plan.cluster,
        plan.prune.len(),
        plan.live,
        plan.create.len()
    );
    match printer.format {
        OutputFormat::Json => {
            printer.document(
                plan,
                &[
                    ("needs_approval", json!(approval)),
                    ("stale_clusters", json!(stale)),
                ],
            )?;
            return Ok(());
        }
        OutputFormat::Markdown => printer.prose(&format!(
            "### annal prune plan at {}\n\n**{headline}**\n",
            plan.at
        ))?,
        OutputFormat::Table | OutputFormat::Wide | OutputFormat::Html => {
            printer.prose(&format!("Prune plan at {}: {headline}\n", plan.at))?
        }
        OutputFormat::Csv => {}
    }
    for f in &plan.flags {
        printer.prose(&format!("threshold: {}", f.detail))?;
    }
    for s in stale {
        printer.prose(&s.describe())?;
    }
    let mut table = Table::new(&["action", "group", "kind", "namespace", "name", "flags"])
        .narrow(&["action", "kind", "namespace", "name", "flags"]);
    for (action, objects) in [("delete", &plan.prune), ("create", &plan.create)] {
        for o in objects {
            table.push(vec![
                json!(action),
                json!(o.group),
                json!(o.kind),
                json!(o.namespace),
                json!(o.name),
                Value::String(
                    o.flags
                        .iter()
                        .map(|f| f.detail.as_str())
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
            ]);
        }
    }
    printer.table(&table)?;
    Ok(())
}
