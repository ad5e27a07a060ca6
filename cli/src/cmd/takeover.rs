//! `annal takeover-plan`: what a new controller may adopt, as a CI gate.

use annal_query::asof::coverage::Stale;
use annal_query::asof::inventory::AsOf;
use annal_query::recovery::takeover::{self, Class, Plan, Request, Scope};
use annal_schemas::Timestamp;
use annal_store::Store;
use serde_json::{json, Value};

use crate::args::TakeoverArgs;
use crate::exit::{Exit, UsageError};
use crate::output::{OutputFormat, Printer, Table};

pub fn run(store: &Store, args: &TakeoverArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let scope = if !args.clusters.is_empty() {
        Scope::Clusters(args.clusters.clone())
    } else {
        let mut apps = args.apps.clone();
        if let Some(file) = &args.apps_from {
            apps.extend(apps_from(file)?);
        }
        if apps.is_empty() {
            return Err(UsageError(
                "no apps to take over (--app, --apps-from or --cluster)".into(),
            )
            .into());
        }
        Scope::Apps(apps)
    };
    let request = Request {
        controller: args.controller.clone(),
        scope,
        normal_managers: args.normal_managers.clone(),
    };
    let as_of = AsOf::new(store, args.at.unwrap_or_else(Timestamp::now), args.known_at)?;
    let plan = takeover::plan(store, &request, &as_of)?;
    if plan.objects.is_empty() {
        return Err(UsageError(format!(
            "nothing to take over at {}: no live object is claimed by {} and none is in their last-good inventories",
            plan.at,
            plan.apps.join(", ")
        ))
        .into());
    }
    let mut clusters: Vec<String> = plan.summary.iter().map(|s| s.cluster.clone()).collect();
    clusters.dedup();
    let stale = super::coverage::stale(store, &clusters, &as_of, &args.freshness, printer)?;
    let approval = (plan.needs_approval() && !args.allow_conflicts)
        || (!stale.is_empty() && !args.allow_stale);
    print(&plan, &stale, approval, printer)?;
    Ok(if approval {
        Exit::NeedsApproval
    } else {
        Exit::Ok
    })
}

fn print(plan: &Plan, stale: &[Stale], approval: bool, printer: &Printer) -> anyhow::Result<()> {
    let verdict = if !plan.needs_approval() && stale.is_empty() {
        "safe: every object is ADOPT"
    } else if !plan.needs_approval() && approval {
        "needs approval: every object is ADOPT, but a cluster's data is stale"
    } else if approval {
        "needs approval: some objects are not ADOPT"
    } else if plan.needs_approval() {
        "allowed: some objects are not ADOPT (--allow-conflicts)"
    } else {
        "allowed: every object is ADOPT, on stale data (--allow-stale)"
    };
    let counts: Vec<String> = Class::ALL
        .iter()
        .map(|c| format!("{} {}", plan.count(*c), c.as_str()))
        .collect();
    match printer.format {
        OutputFormat::Json => {
            printer.document(
                plan,
                &[
                    ("needs_approval", json!(approval)),
                    ("verdict", json!(verdict)),
                    ("stale_clusters", json!(stale)),
                ],
            )?;
            return Ok(());
        }
        OutputFormat::Markdown => {
            printer.prose(&format!(
                "### annal takeover plan for `{}` at {}\n\n**{verdict}**: {}\n",
                plan.controller,
                plan.at,
                counts.join(", ")
            ))?;
        }
        OutputFormat::Table | OutputFormat::Wide | OutputFormat::Html => {
            printer.prose(&format!(
                "Takeover plan for {} at {}: {}\n{verdict}\n",
                plan.controller,
                plan.at,
                counts.join(", ")
            ))?;
        }
        OutputFormat::Csv => {}
    }
    for s in stale {
        printer.prose(&s.describe())?;
    }
    if printer.format != OutputFormat::Csv {
        let mut summary = Table::new(&["cluster", "app", "adopt", "conflict", "orphan", "missing"]);
        for s in &plan.summary {
            summary.push(vec![
                json!(s.cluster),
                json!(s.app),
                json!(s.adopt),
                json!(s.conflict),
                json!(s.orphan),
                json!(s.missing),
            ]);
        }
        printer.table(&summary)?;
        printer.prose("")?;
    }
    let mut objects = Table::new(&[
        "class",
        "cluster",
        "app",
        "group",
        "kind",
        "namespace",
        "name",
        "reasons",
    ])
    .narrow(&[
        "class",
        "cluster",
        "app",
        "kind",
        "namespace",
        "name",
        "reasons",
    ]);
    for o in &plan.objects {
        // Markdown is for a review comment: the ADOPT rows are the summary.
        if printer.format == OutputFormat::Markdown && o.class == Class::Adopt {
            continue;
        }
        objects.push(vec![
            json!(o.class.as_str()),
            json!(o.cluster),
            json!(o.app),
            json!(o.group),
            json!(o.kind),
            json!(o.namespace),
            json!(o.name),
            Value::String(
                o.reasons
                    .iter()
                    .map(|r| r.detail.as_str())
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        ]);
    }
    printer.table(&objects)?;
    Ok(())
}

/// Apps listed one per line; blank lines and `#` comments skipped.
fn apps_from(path: &std::path::Path) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
    Ok(text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}
