"""annal beside PostgreSQL and DuckDB on the same seeded data, in one run.

Driven by `bench/run` (which installs PostgreSQL, DuckDB and psycopg and
builds annal); every case runs for each system on byte-identical input:

- ingest: `annal ingest FILE` (durable group commits, every derived index)
  vs PostgreSQL `\\copy` into a JSONB `events` table whose BEFORE INSERT
  trigger chains SHA-256 hashes with pgcrypto (the tamper-evident table
  teams build by hand) and fills the typed columns the queries need, then
  the indexes, built after the load (PostgreSQL's fastest path), and
  VACUUM ANALYZE; events/s and bytes on disk per event.
- as-of inventory at random instants, whole fleet and one cluster: annal's
  inventory_at vs DuckDB over annal's Parquet export (window query) vs
  PostgreSQL (DISTINCT ON over an index); p50/p95; row counts must agree.
- verify: `annal verify` (every leaf hash, the Merkle root, the signed
  checkpoint) vs recomputing the PostgreSQL chain; MB/s and events/s.
- auditor queries on annal (SQL over the ledger) and DuckDB (Parquet).
- the systems take turns: annal's and PostgreSQL's ingest runs and
  verify runs alternate, and annal's query rounds alternate with DuckDB's
  over its native tables (one round of every case at a time), so that
  the host's drift (up to 2x within an hour) does not fall on one system.
- peak memory: annal and DuckDB processes by /usr/bin/time (max RSS);
  the PostgreSQL server as the peak sum of its processes' PSS, sampled.

Every timing is repeated RUNS times; the results keep each run and the
median with min-max. Usage (see bench/run): compare.py SIZE [options].
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = {
    # name: (events, objects, clusters)
    "small": (1_000_000, 100_000, 100),
    "large": (10_000_000, 1_000_000, 100),
}
PG_PORT = 55432


def main():
    p = argparse.ArgumentParser()
    p.add_argument("size", choices=sorted(SIZES) + ["tiny"])
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--runs", type=int, default=5, help="repetitions of every timing")
    p.add_argument("--ingest-runs", type=int, help="repetitions of ingest (default RUNS)")
    p.add_argument("--instants", type=int, default=10, help="random instants per as-of question")
    p.add_argument("--work", default=str(ROOT / "bench/data/compare"))
    p.add_argument("--annal", default=str(ROOT / "target/release/annal"))
    p.add_argument("--annal-bench", default=str(ROOT / "target/release/annal-bench"))
    p.add_argument("--pg-bin", required=True, help="PostgreSQL's bin directory")
    p.add_argument("--keep", action="store_true",
                   help="reuse a loaded ledger and table (skip ingest; the results keep its runs)")
    p.add_argument("--more-ingest-runs", type=int, metavar="N",
                   help="add N ingest runs per system to the existing results (nothing else)")
    p.add_argument("--low-disk", action="store_true",
                   help="delete annal's ledger once its cases are done")
    args = p.parse_args()
    events, objects, clusters = SIZES.get(args.size, (60_000, 6_000, 10))
    ingest_runs = args.ingest_runs or args.runs
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    name = f"{args.size}-{args.seed}"
    results_path = ROOT / f"bench/results/compare-{name}.json"

    # The large JSONL (7 GB) is kept zstd-compressed (a tenth of the size)
    # and decompressed into each system's loader through a pipe; the others
    # are read from the file.
    dataset = work / f"std-{events}-{args.seed}.jsonl{'.zst' if args.size == 'large' else ''}"
    params_path = work / f"std-{events}-{args.seed}.params.json"
    if not dataset.exists() or not params_path.exists():
        log(f"generating {dataset.name}")
        zst = dataset.suffix == ".zst"
        generate = subprocess.Popen(
            [str(a) for a in [args.annal_bench, "dataset", "--events", events, "--objects", objects,
                              "--clusters", clusters, "--seed", args.seed, "--instants", args.instants,
                              "--out", "-" if zst else dataset, "--params", params_path]],
            stdout=subprocess.PIPE)
        if zst:
            run(["zstd", "-q", "-f", "-3", "-o", dataset], stdin=generate.stdout)
        if generate.wait() != 0:
            raise SystemExit("annal-bench dataset failed")
    params = json.loads(params_path.read_text())
    size_bytes = dataset.stat().st_size
    if dataset.suffix == ".zst":
        size_bytes = int(subprocess.run(f"zstd -dc '{dataset}' | wc -c", shell=True, check=True,
                                        capture_output=True, text=True).stdout)
    results = {
        "dataset": {"name": args.size, "events": events, "objects": objects, "clusters": clusters,
                    "late": params["late"], "seed": args.seed, "jsonl_bytes": size_bytes},
        "machine": machine(),
        "runs": args.runs,
        "ingest_runs": ingest_runs,
        "versions": {},
    }
    log(f"dataset: {events:,} events ({params['late']:,} late), {size_bytes / 1e6:.0f} MB JSONL")

    ledger = work / f"annal-{name}"
    export = work / f"parquet-{name}"
    if args.more_ingest_runs:
        more_ingest_runs(args, results_path, dataset, events, ledger, work)
        return
    pg = Postgres(Path(args.pg_bin), work / "pg")
    cases = asof_cases(params) + auditor_cases(params)
    results["versions"]["annal"] = run([args.annal, "--version"]).strip()
    results["ingest"], results["queries"], results["verify"] = {}, {}, {}

    # The systems take turns wherever they do the same work (ingest runs,
    # query rounds, verify runs): this host's speed drifts by up to 2x
    # within an hour, and one system timed an hour after the other would
    # compare the hours. So PostgreSQL's table and annal's ledger are on
    # disk together (--low-disk removes the ledger once annal is done, for
    # DuckDB's last layouts). The results file is rewritten after each
    # phase, so a run cut short keeps what it measured.
    def save():
        write_results(results, results_path)

    pg.start()
    try:
        results["versions"]["postgresql"] = pg.scalar("SHOW server_version")
        keep_annal = args.keep and (ledger / "ledger").exists()
        keep_pg = args.keep and pg.loaded(events)
        if keep_annal:
            log("reusing the loaded ledger (--keep)")
        if keep_pg:
            log("reusing the loaded PostgreSQL table (--keep)")
        if keep_annal and keep_pg and results_path.exists():
            # Both loads are the ones the results file measured: their ingest
            # runs stay in it, and only what follows is measured again.
            earlier = json.loads(results_path.read_text())
            if earlier.get("dataset") == results["dataset"] and earlier.get("ingest"):
                for key in ["ingest", "ingest_runs", "open_after_ingest"]:
                    if key in earlier:
                        results[key] = earlier[key]
                log("keeping the ingest runs of " + str(results_path.relative_to(ROOT)))
        for _ in range(ingest_runs):
            if not keep_annal:
                results["ingest"].setdefault("annal", []).extend(
                    ingest_annal(args.annal, ledger, dataset, events, 1))
            if not keep_pg:
                results["ingest"].setdefault("postgresql", []).extend(
                    pg.ingest(dataset, events, 1))
            save()
            if keep_annal and keep_pg:
                break
        if not keep_annal:
            # The first commands after a large ingest: what a user who
            # ingests and then asks pays (compaction a writer left behind
            # included).
            results["open_after_ingest"] = {"annal": open_annal(args.annal, ledger, args.runs)}
            save()
        started = time.perf_counter()
        run([args.annal, "--data", ledger, "export", "parquet", "--table", "events",
             "--table", "objects", "--to", export])
        results["export_seconds"] = time.perf_counter() - started
        # DuckDB's layouts are built from the export before any query, so
        # that annal's rounds alternate with DuckDB's over its native
        # tables (its best layout).
        results["duckdb_load"] = duckdb_prepare(export, work)
        save()
        annal_report, table_report = lockstep_queries(args.annal_bench, ledger, export, cases,
                                                      args.runs, work)
        results["queries"]["annal"] = annal_report
        results["versions"]["duckdb"] = table_report.pop("version")
        results["queries"][DUCKDB_LAYOUTS["table"]] = table_report
        results["lockstep"] = ["annal", DUCKDB_LAYOUTS["table"]]
        save()
        results["queries"]["postgresql"] = pg.queries(
            [c for c in cases if "postgresql" in c], args.runs)
        save()
        results["verify"]["annal"], results["verify"]["postgresql"] = [], []
        for _ in range(args.runs):
            results["verify"]["annal"] += verify_annal(args.annal, ledger, 1)
            results["verify"]["postgresql"] += pg.verify(1)
        save()
        # What every command pays before its work: the store open alone
        # (`annal checkpoint`), timed while the ledger is still on disk.
        results["open"] = {"annal": open_annal(args.annal, ledger, args.runs)}
        save()
    finally:
        pg.stop()
    if args.low_disk:
        shutil.rmtree(ledger)
    # DuckDB the two other ways on the same rows: the Hive export annal
    # writes (many small files) and one Parquet file per table (its native
    # tables ran in lockstep with annal above); each comparison is made
    # with the best of the three.
    for layout in [l for l in DUCKDB_LAYOUTS if l != "table"]:
        report = duckdb_queries(export, cases, args.runs, work, layout)
        results["versions"]["duckdb"] = report.pop("version")
        results["queries"][DUCKDB_LAYOUTS[layout]] = report
        save()
    print(markdown(results))
    log(f"results: {results_path.relative_to(ROOT)} (+ .md)")
    bad = [c for c in results["row_checks"] if not c["agree"]]
    if bad:
        log(f"row counts disagree: {bad}")
        sys.exit(1)


def more_ingest_runs(args, results_path, dataset, events, ledger, work):
    """Appends ingest runs to a results file (a long ingest's runs can be
    spread over several sittings); PostgreSQL first, then its table is
    dropped, so that with --low-disk only one system's data is on disk."""
    results = json.loads(results_path.read_text())
    pg = Postgres(Path(args.pg_bin), work / "pg")
    pg.start()
    try:
        results["ingest"]["postgresql"] += pg.ingest(dataset, events, args.more_ingest_runs)
        results["ingest_runs"] = min(len(v) for v in results["ingest"].values())
        write_results(results, results_path)
        if args.low_disk:
            pg.conn.execute("DROP TABLE events")
    finally:
        pg.stop()
    for _ in range(args.more_ingest_runs):
        results["ingest"]["annal"] += ingest_annal(args.annal, ledger, dataset, events, 1)
        results["ingest_runs"] = min(len(v) for v in results["ingest"].values())
        write_results(results, results_path)
    if args.low_disk:
        shutil.rmtree(ledger, ignore_errors=True)
    print(markdown(results))


# ---------------------------------------------------------------- cases

def asof_cases(params):
    """inventory_at at each instant, for the fleet and for one cluster."""
    cases = []
    for i, (at, cluster) in enumerate(params["instants"]):
        for scope, where_annal, where_other in [
            ("fleet", "", ""),
            ("cluster", f" WHERE cluster = '{cluster}'", f" AND cluster = '{cluster}'"),
        ]:
            cases.append({
                "name": f"asof-{scope}-{i}",
                "group": f"as-of inventory, {'whole fleet' if scope == 'fleet' else 'one cluster'}",
                "annal": f"SELECT * FROM inventory_at('{at}'){where_annal}",
                "duckdb": f"""SELECT * EXCLUDE (rn) FROM (
                    SELECT *, row_number() OVER (
                      PARTITION BY cluster, "group", kind, namespace, name
                      ORDER BY valid_from DESC, TRY_CAST(resource_version AS BIGINT) DESC NULLS LAST,
                               "index" DESC) AS rn
                    FROM objects WHERE valid_from <= TIMESTAMPTZ '{at}'{where_other}
                  ) WHERE rn = 1 AND NOT deleted""",
                "postgresql": f"""SELECT cluster, grp, kind, namespace, name, uid, rv, vtime, seq FROM (
                    SELECT DISTINCT ON (cluster, grp, kind, namespace, name)
                           cluster, grp, kind, namespace, name, uid, rv, vtime, seq, deleted
                    FROM events WHERE kind IS NOT NULL AND vtime <= '{at}'{where_other}
                    ORDER BY cluster, grp, kind, namespace, name, vtime DESC, rv DESC NULLS LAST, seq DESC
                  ) s WHERE NOT deleted""",
            })
    return cases


def auditor_cases(params):
    """Questions an auditor asks, in annal's SQL and DuckDB's."""
    c, group, kind, ns, name = params["object"]
    day = params["day"]
    start, end = f"{day}T00:00:00Z", next_day(day)
    after, cluster = params["after"], params["cluster"]
    objects = "type IN ('object.observed', 'object.deleted')"
    a_str = lambda *path: "json_get_str(data, " + ", ".join(f"'{p}'" for p in path) + ")"
    d_str = lambda *path: f"json_extract_string(data, '$.{'.'.join(path)}')"
    cases = []

    def case(key, title, annal, duckdb):
        cases.append({"name": key, "group": title, "annal": annal, "duckdb": duckdb})

    for dialect, s, ts in [("annal", a_str, ""), ("duckdb", d_str, "TIMESTAMPTZ ")]:
        q = {}
        q["who-changed-object"] = f"""SELECT time, type, principal, credential,
              {s('metadata', 'resourceVersion')} AS resource_version
            FROM events WHERE cluster = '{c}' AND {objects}
              AND {s('kind')} = '{kind}' AND {s('metadata', 'namespace')} = '{ns}'
              AND {s('metadata', 'name')} = '{name}'
            ORDER BY time"""
        q["credentials-after-t"] = f"""SELECT credential, principal, count(*) AS writes,
              min(time) AS first_write, max(time) AS last_write
            FROM events WHERE cluster = '{cluster}' AND time > {ts}'{after}' AND {objects}
            GROUP BY credential, principal ORDER BY writes DESC, credential"""
        q["revoked-credential-reused"] = f"""WITH revoked AS (
              SELECT cluster AS revoked_on, {s('fingerprint')} AS fingerprint, time AS revoked_at
              FROM events WHERE type = 'cluster.credential.revoked')
            SELECT e.cluster, e.credential, e.principal, count(*) AS uses, min(e.time) AS first_use
            FROM events e JOIN revoked r ON e.credential = r.fingerprint AND e.cluster = r.revoked_on
            WHERE e.time > r.revoked_at
            GROUP BY e.cluster, e.credential, e.principal ORDER BY uses DESC, e.cluster"""
        q["human-writes-per-day"] = f"""SELECT principal, date_trunc('day', time) AS day, count(*) AS writes
            FROM events WHERE {objects} AND principal NOT LIKE 'system:%'
            GROUP BY principal, date_trunc('day', time) ORDER BY principal, day"""
        q["deletions-on-day"] = f"""SELECT cluster, principal, count(*) AS deletions
            FROM events WHERE type = 'object.deleted'
              AND time >= {ts}'{start}' AND time < {ts}'{end}'
            GROUP BY cluster, principal ORDER BY cluster, principal"""
        q["objects-changed-on-day"] = f"""SELECT cluster, count(*) AS versions, count(DISTINCT name) AS objects
            FROM objects WHERE valid_from >= {ts}'{start}' AND valid_from < {ts}'{end}'
            GROUP BY cluster ORDER BY cluster"""
        if dialect == "annal":
            q["prune-syncs-per-app-day"] = """SELECT app, date_trunc('day', time) AS day, count(*) AS syncs
                FROM syncs WHERE prune GROUP BY app, date_trunc('day', time) ORDER BY app, day"""
            q["failed-syncs-per-cluster"] = f"""SELECT cluster, count(*) AS failed
                FROM syncs WHERE phase = 'Failed' AND time > '{after}'
                GROUP BY cluster ORDER BY failed DESC, cluster"""
            q["sync-cost-per-app"] = """SELECT app, count(*) AS syncs, sum(render_seconds) AS render_seconds,
                  sum(api_requests) AS api_requests, sum(api_throttled) AS throttled
                FROM syncs GROUP BY app ORDER BY app"""
        else:
            q["prune-syncs-per-app-day"] = """SELECT json_extract_string(data, '$.app') AS app,
                  date_trunc('day', time) AS day, count(*) AS syncs
                FROM events WHERE type = 'app.sync' AND json_extract(data, '$.prune')::BOOLEAN
                GROUP BY ALL ORDER BY app, day"""
            q["failed-syncs-per-cluster"] = f"""SELECT cluster, count(*) AS failed
                FROM events WHERE type = 'app.sync' AND json_extract_string(data, '$.phase') = 'Failed'
                  AND time > TIMESTAMPTZ '{after}'
                GROUP BY cluster ORDER BY failed DESC, cluster"""
            q["sync-cost-per-app"] = """SELECT json_extract_string(data, '$.app') AS app, count(*) AS syncs,
                  sum(json_extract(data, '$.metrics.render_seconds')::DOUBLE) AS render_seconds,
                  sum(json_extract(data, '$.metrics.api_requests')::BIGINT) AS api_requests,
                  sum(json_extract(data, '$.metrics.api_throttled')::BIGINT) AS throttled
                FROM events WHERE type = 'app.sync' GROUP BY ALL ORDER BY app"""
        for key, sql in q.items():
            if dialect == "annal":
                case(key, key.replace("-", " "), sql, None)
            else:
                next(x for x in cases if x["name"] == key)["duckdb"] = sql
    return cases


# ---------------------------------------------------------------- annal

def ingest_annal(annal, ledger, dataset, events, runs):
    out = []
    for r in range(runs):
        shutil.rmtree(ledger, ignore_errors=True)
        run([annal, "--data", ledger, "init", "--origin", "annal.bench/compare"])
        sync()
        if dataset.suffix == ".zst":
            seconds, rss, _ = timed([annal, "--data", ledger, "ingest", "-"], stdin_zstd=dataset)
        else:
            seconds, rss, _ = timed([annal, "--data", ledger, "ingest", dataset])
        disk = du(ledger)
        out.append({"seconds": seconds, "events_per_second": events / seconds,
                    "disk_bytes": disk, "bytes_per_event": disk / events, "peak_rss_kb": rss})
        log(f"annal ingest run {r + 1}/{runs}: {events / seconds:,.0f} events/s, "
            f"{disk / events:,.0f} bytes/event, {rss / 1024:,.0f} MB RSS")
    return out


def lockstep_queries(annal_bench, ledger, export, cases, runs, work):
    """annal's queries and DuckDB's over its native tables, each in its own
    process kept open (one store open, one database), one round of every
    case at a time, alternating: annal, DuckDB, annal, ... The shared
    host's speed drifts by up to 2x within an hour, so two systems timed an
    hour apart would compare the hours. Returns both reports."""
    annal_cases = work / "annal-cases.json"
    annal_cases.write_text(json.dumps([{"name": c["name"], "sql": c["annal"]} for c in cases]))
    duck_cases = work / "duckdb-cases.json"
    duck_cases.write_text(json.dumps([{"name": c["name"], "sql": c["duckdb"]} for c in cases]))
    annal_out, duck_out = work / "annal-timings.json", work / "duckdb-timings.json"
    workers = [
        Lockstep("annal", [annal_bench, "sql", "--data", ledger, "--cases", annal_cases,
                           "--lockstep", "--out", annal_out]),
        Lockstep("duckdb (table)", [sys.executable, __file__, "--duckdb-worker", export,
                                    duck_cases, "lockstep", duck_out, "table", work]),
    ]
    try:
        for r in range(runs):
            for w in workers:
                w.round()
            log(f"lockstep round {r + 1}/{runs} done")
    finally:
        rss = [w.close() for w in workers]
    report = json.loads(annal_out.read_text())
    log(f"annal queries: store open {report['open_seconds']:.2f} s, {rss[0] / 1024:,.0f} MB RSS")
    annal = {"open_seconds": report["open_seconds"], "peak_rss_kb": rss[0],
             "cases": {c["name"]: {"seconds": c["seconds"], "rows": c["rows"]}
                       for c in report["cases"]}}
    duck = json.loads(duck_out.read_text())
    duck["peak_rss_kb"] = rss[1]
    log(f"duckdb (table) queries: {rss[1] / 1024:,.0f} MB RSS")
    return annal, duck


class Lockstep:
    """A query process that runs one round per line on its stdin and says
    `done` on its stdout; its max RSS by /usr/bin/time."""

    def __init__(self, name, cmd):
        self.name = name
        self.rss_file = rss_path(f"lockstep-{id(self)}")
        self.proc = subprocess.Popen(with_max_rss(cmd, self.rss_file),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def round(self):
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if line.strip() != "done":
            raise SystemExit(f"{self.name}: a round ended without `done` (exit {self.proc.poll()})")

    def close(self):
        """Ends the process (it writes its results); its max RSS in KB."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        code = self.proc.wait()
        if code != 0:
            raise SystemExit(f"{self.name} exited with {code}")
        return read_max_rss(self.rss_file)


def verify_annal(annal, ledger, runs):
    out = []
    for r in range(runs):
        seconds, rss, stdout = timed([annal, "--data", ledger, "verify", "-o", "json"])
        doc = json.loads(stdout)
        if not doc["intact"]:
            raise SystemExit(f"annal verify: not intact: {doc}")
        out.append({"seconds": seconds, "bytes": doc["bytes"], "entries": doc["entries"],
                    "mb_per_second": doc["bytes"] / seconds / 1e6,
                    "events_per_second": doc["entries"] / seconds, "peak_rss_kb": rss})
    log(f"annal verify: {median([o['mb_per_second'] for o in out]):.0f} MB/s")
    return out


def open_annal(annal, ledger, runs):
    """`annal checkpoint`, which only opens the store and prints the
    signed checkpoint: process start to exit, and peak RSS."""
    out = []
    for _ in range(runs):
        seconds, rss, _ = timed([annal, "--data", ledger, "checkpoint"])
        out.append({"seconds": seconds, "peak_rss_kb": rss})
    log(f"annal checkpoint (the store open): {median([o['seconds'] for o in out]):.2f} s, "
        f"{median([o['peak_rss_kb'] for o in out]) / 1024:.0f} MB RSS")
    return out


# ---------------------------------------------------------------- DuckDB

# DuckDB's layouts: how it reads the data -> the system's name in results.
DUCKDB_LAYOUTS = {"hive": "duckdb", "file": "duckdb-file", "table": "duckdb-table"}
DUCKDB_TABLES = ["events", "objects"]


def duckdb_prepare(export, work):
    """From annal's Hive export: one Parquet file per table, and a DuckDB
    database with native tables (in a child process; the seconds are
    reported, not counted in any query)."""
    seconds, rss, _ = timed([sys.executable, __file__, "--duckdb-prepare", export, work])
    log(f"duckdb: one Parquet file per table and native tables in {seconds:.0f} s, {rss / 1024:,.0f} MB RSS")
    return {"seconds": seconds, "peak_rss_kb": rss,
            "file_bytes": sum(f.stat().st_size for f in (work / "duckdb-file").glob("*.parquet")),
            "table_bytes": (work / "duckdb-table.db").stat().st_size}


def duckdb_prepare_worker(export, work):
    import duckdb

    work = Path(work)
    (work / "duckdb-file").mkdir(parents=True, exist_ok=True)
    db = work / "duckdb-table.db"
    db.unlink(missing_ok=True)
    con = duckdb.connect(str(db))
    con.execute("SET TimeZone = 'UTC'")
    for table in DUCKDB_TABLES:
        hive = f"read_parquet('{export}/{table}/**/*.parquet', hive_partitioning = true)"
        con.execute(f"COPY (SELECT * FROM {hive}) TO '{work}/duckdb-file/{table}.parquet' (FORMAT parquet)")
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM {hive}")
    con.execute("CHECKPOINT")
    con.close()


def duckdb_queries(export, cases, runs, work, layout="hive"):
    """In a child process (its max RSS is DuckDB's), round-robin like annal's."""
    file = work / "duckdb-cases.json"
    file.write_text(json.dumps([{"name": c["name"], "sql": c["duckdb"]} for c in cases]))
    out = work / "duckdb-timings.json"
    seconds, rss, _ = timed([sys.executable, __file__, "--duckdb-worker", export, file, runs, out,
                             layout, work])
    report = json.loads(out.read_text())
    log(f"duckdb ({layout}) queries: {seconds:.0f} s, {rss / 1024:,.0f} MB RSS")
    report["peak_rss_kb"] = rss
    return report


def duckdb_worker(export, cases_file, runs, out, layout="hive", work=None):
    import duckdb

    if layout == "table":
        con = duckdb.connect(str(Path(work) / "duckdb-table.db"), read_only=True)
    else:
        con = duckdb.connect()
    con.execute(f"PRAGMA threads={os.cpu_count()}")
    con.execute("SET TimeZone = 'UTC'")
    for table in DUCKDB_TABLES:
        if layout == "hive":
            con.execute(f"""CREATE VIEW {table} AS SELECT * FROM read_parquet(
                '{export}/{table}/**/*.parquet', hive_partitioning = true)""")
        elif layout == "file":
            con.execute(f"""CREATE VIEW {table} AS SELECT * FROM read_parquet(
                '{work}/duckdb-file/{table}.parquet')""")
    cases = json.loads(Path(cases_file).read_text())
    timings = {c["name"]: {"seconds": [], "rows": []} for c in cases}
    # "lockstep": a round per line on stdin, `done` after each (see
    # lockstep_queries); otherwise RUNS rounds.
    rounds = sys.stdin if runs == "lockstep" else range(int(runs))
    for _ in rounds:
        for c in cases:
            started = time.perf_counter()
            result = con.execute(c["sql"])
            fetch = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
            table = fetch()
            timings[c["name"]]["seconds"].append(time.perf_counter() - started)
            timings[c["name"]]["rows"].append(table.num_rows)
        if runs == "lockstep":
            print("done", flush=True)
    Path(out).write_text(json.dumps({"version": duckdb.__version__, "cases": timings}))


# ---------------------------------------------------------------- PostgreSQL

SCHEMA = r"""
DROP TABLE IF EXISTS events;
DROP FUNCTION IF EXISTS events_chain();
CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE TABLE events (
  seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  body      jsonb NOT NULL,
  hash      bytea NOT NULL,
  id        text NOT NULL,
  type      text NOT NULL,
  vtime     timestamptz NOT NULL,
  cluster   text,
  grp       text, kind text, namespace text, name text, uid text, rv bigint, deleted boolean
);
-- The tamper-evident chain: each row's hash covers the previous row's hash
-- and this row's JSON. A BEFORE ROW trigger sees the rows inserted before it
-- in the same COPY, and its presence makes COPY insert row by row in order.
CREATE FUNCTION events_chain() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  prev bytea;
  d jsonb;
  api text;
  rv text;
BEGIN
  SELECT hash INTO prev FROM events ORDER BY seq DESC LIMIT 1;
  NEW.hash := digest(coalesce(prev, ''::bytea) || convert_to(NEW.body::text, 'UTF8'), 'sha256');
  NEW.id := NEW.body->>'id';
  NEW.type := NEW.body->>'type';
  NEW.vtime := (NEW.body->>'time')::timestamptz;
  NEW.cluster := NEW.body->>'cluster';
  IF NEW.type IN ('object.observed', 'object.deleted') THEN
    d := NEW.body->'data';
    api := d->>'apiVersion';
    NEW.grp := CASE WHEN strpos(api, '/') > 0 THEN split_part(api, '/', 1) ELSE '' END;
    NEW.kind := d->>'kind';
    NEW.namespace := coalesce(d->'metadata'->>'namespace', '');
    NEW.name := d->'metadata'->>'name';
    NEW.uid := d->'metadata'->>'uid';
    rv := d->'metadata'->>'resourceVersion';
    NEW.rv := CASE WHEN rv ~ '^[0-9]{1,18}$' THEN rv::bigint END;
    NEW.deleted := NEW.type = 'object.deleted';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER events_chain BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION events_chain();
"""

INDEXES = """
CREATE UNIQUE INDEX events_id ON events (id);
CREATE INDEX events_object_asof ON events (cluster, grp, kind, namespace, name, vtime DESC, rv DESC NULLS LAST, seq DESC)
  INCLUDE (uid, deleted) WHERE kind IS NOT NULL;
CREATE INDEX events_cluster_time ON events (cluster, vtime);
"""

VERIFY = r"""
SELECT count(*) FILTER (WHERE hash IS DISTINCT FROM digest(coalesce(prev, ''::bytea) || b, 'sha256')),
       count(*), coalesce(sum(octet_length(b)), 0)
FROM (SELECT hash, convert_to(body::text, 'UTF8') AS b, lag(hash) OVER (ORDER BY seq) AS prev
      FROM events) s
"""


class Postgres:
    """A private PostgreSQL cluster in WORK/pg, on loopback, run as `postgres`."""

    def __init__(self, bindir, datadir):
        self.bin, self.data = bindir, datadir
        self.dsn = f"host=127.0.0.1 port={PG_PORT} user=postgres dbname=postgres"

    def as_postgres(self, cmd, **kw):
        return run(["runuser", "-u", "postgres", "--"] + cmd, **kw)

    def start(self):
        if not (self.data / "PG_VERSION").exists():
            self.data.mkdir(parents=True, exist_ok=True)
            shutil.chown(self.data, "postgres", "postgres")
            self.as_postgres([self.bin / "initdb", "-D", self.data, "--auth=trust", "-U", "postgres",
                              "--encoding=UTF8", "--locale=C"])
        memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        # Sized for the machine, as a DBA would (never below the defaults):
        # a quarter of memory for shared buffers, room for COPY's WAL.
        settings = {
            "listen_addresses": "127.0.0.1", "port": PG_PORT, "unix_socket_directories": self.data,
            "shared_buffers": f"{max(1, int(memory_gb / 4))}GB",
            "effective_cache_size": f"{max(1, int(memory_gb * 3 / 4))}GB",
            "work_mem": "256MB", "maintenance_work_mem": "2GB", "max_wal_size": "4GB",
            "checkpoint_timeout": "15min", "max_parallel_workers_per_gather": os.cpu_count(),
            "max_parallel_maintenance_workers": os.cpu_count(),
        }
        opts = " ".join(f"-c {k}={v}" for k, v in settings.items())
        self.as_postgres([self.bin / "pg_ctl", "-D", self.data, "-l", self.data / "server.log",
                          "-o", opts, "-w", "start"])
        import psycopg
        self.conn = psycopg.connect(self.dsn, autocommit=True)

    def stop(self):
        try:
            self.conn.close()
        finally:
            self.as_postgres([self.bin / "pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop"])

    def scalar(self, sql, *args):
        return self.conn.execute(sql, args).fetchone()[0]

    def loaded(self, events):
        exists = self.scalar("SELECT to_regclass('events') IS NOT NULL")
        return exists and self.scalar("SELECT count(*) FROM events") == events

    def ingest(self, dataset, events, runs):
        out = []
        for r in range(runs):
            self.conn.execute(SCHEMA)
            self.conn.execute("CHECKPOINT")
            sync()
            source = (f"PROGRAM 'zstd -dc {dataset}'" if dataset.suffix == ".zst"
                      else f"'{dataset}'")
            with Sampler(self.data) as mem:
                started = time.perf_counter()
                # Client-side COPY, each line one jsonb value (CSV mode with
                # quote and delimiter bytes that JSON never contains).
                run(["psql", self.dsn, "-v", "ON_ERROR_STOP=1", "-c",
                     f"\\copy events (body) FROM {source} "
                     "WITH (FORMAT csv, QUOTE e'\\x01', DELIMITER e'\\x02')"])
                copied = time.perf_counter()
                self.conn.execute(INDEXES)
                self.conn.execute("VACUUM ANALYZE events")
                self.conn.execute("CHECKPOINT")
                done = time.perf_counter()
            count = self.scalar("SELECT count(*) FROM events")
            if count != events:
                raise SystemExit(f"PostgreSQL holds {count} rows, expected {events}")
            disk = self.scalar("SELECT pg_total_relation_size('events')")
            seconds = done - started
            out.append({"seconds": seconds, "copy_seconds": copied - started,
                        "index_seconds": done - copied, "events_per_second": events / seconds,
                        "disk_bytes": disk, "bytes_per_event": disk / events,
                        "peak_pss_kb": mem.peak_kb})
            log(f"postgresql ingest run {r + 1}/{runs}: {events / seconds:,.0f} events/s "
                f"(COPY {copied - started:.0f} s, indexes {done - copied:.0f} s), "
                f"{disk / events:,.0f} bytes/event, {mem.peak_kb / 1024:,.0f} MB PSS")
        return out

    def queries(self, cases, runs):
        timings = {c["name"]: {"seconds": [], "rows": []} for c in cases}
        with Sampler(self.data) as mem:
            for _ in range(runs):
                for c in cases:
                    started = time.perf_counter()
                    rows = self.conn.execute(c["postgresql"]).fetchall()
                    timings[c["name"]]["seconds"].append(time.perf_counter() - started)
                    timings[c["name"]]["rows"].append(len(rows))
        log(f"postgresql queries: {mem.peak_kb / 1024:,.0f} MB PSS")
        return {"peak_pss_kb": mem.peak_kb, "cases": timings}

    def verify(self, runs):
        out = []
        with Sampler(self.data) as mem:
            for _ in range(runs):
                started = time.perf_counter()
                bad, entries, size = self.conn.execute(VERIFY).fetchone()
                seconds = time.perf_counter() - started
                if bad:
                    raise SystemExit(f"PostgreSQL chain: {bad} rows do not verify")
                out.append({"seconds": seconds, "bytes": int(size), "entries": entries,
                            "mb_per_second": int(size) / seconds / 1e6,
                            "events_per_second": entries / seconds})
        for o in out:
            o["peak_pss_kb"] = mem.peak_kb
        log(f"postgresql verify: {median([o['mb_per_second'] for o in out]):.0f} MB/s")
        return out


class Sampler:
    """Peak of the summed PSS of the PostgreSQL server's processes, sampled
    every 100 ms (PSS splits shared buffers among the processes that map
    them, so the sum counts them once)."""

    def __init__(self, datadir):
        self.pid = int((datadir / "postmaster.pid").read_text().split()[0])
        self.peak_kb = 0
        self.stop = threading.Event()

    def __enter__(self):
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def loop(self):
        while True:
            self.peak_kb = max(self.peak_kb, self.sample())
            if self.stop.wait(0.1):
                return

    def sample(self):
        total = 0
        for pid in [self.pid] + children(self.pid):
            try:
                text = Path(f"/proc/{pid}/smaps_rollup").read_text()
            except OSError:
                continue
            m = re.search(r"^Pss:\s+(\d+) kB", text, re.M)
            total += int(m.group(1)) if m else 0
        return total


def children(pid):
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(k) for k in kids] + [g for k in kids for g in children(int(k))]


# ---------------------------------------------------------------- results

def write_results(results, path):
    """The results file (every run, the row checks, the summary) and its table."""
    results["row_checks"] = row_checks(results["queries"])
    results["summary"] = summarize(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
    path.with_suffix(".md").write_text(markdown(results))


def row_checks(queries):
    """Every system must return the same number of rows for each case."""
    out = []
    for name, t in queries.get("annal", {"cases": {}})["cases"].items():
        counts = {"annal": sorted(set(t["rows"]))}
        for peer in ["postgresql", *DUCKDB_LAYOUTS.values()]:
            if name in queries.get(peer, {"cases": {}})["cases"]:
                counts[peer] = sorted(set(queries[peer]["cases"][name]["rows"]))
        out.append({"case": name, "rows": counts,
                    "agree": all(len(v) == 1 for v in counts.values())
                    and len({v[0] for v in counts.values()}) == 1})
    return out


def spread(values):
    return {"median": median(values), "min": min(values), "max": max(values)}


def summarize(results):
    """Medians with min-max across runs; for the as-of groups, the p50 and
    p95 over instants of each run, then their median across runs."""
    s = {}
    for system, runs in results["ingest"].items():
        s[f"ingest/{system}"] = {
            "events_per_second": spread([r["events_per_second"] for r in runs]),
            "bytes_per_event": spread([r["bytes_per_event"] for r in runs]),
            "peak_memory_kb": spread([r.get("peak_rss_kb", r.get("peak_pss_kb")) for r in runs]),
        }
    groups = {}
    for system, q in results["queries"].items():
        for name, t in q["cases"].items():
            if name.startswith("asof-"):
                scope = name.split("-")[1]
                groups.setdefault((system, scope), []).append(t["seconds"])
            else:
                s[f"query/{name}/{system}"] = {"seconds": spread(t["seconds"])}
        memory = q.get("peak_rss_kb", q.get("peak_pss_kb"))
        s[f"query-memory/{system}"] = memory
    for (system, scope), per_instant in groups.items():
        runs = len(per_instant[0])
        p50 = [percentile([inst[r] for inst in per_instant], 0.5) for r in range(runs)]
        p95 = [percentile([inst[r] for inst in per_instant], 0.95) for r in range(runs)]
        s[f"asof-{scope}/{system}"] = {"p50": spread(p50), "p95": spread(p95)}
    for system, runs in results["verify"].items():
        s[f"verify/{system}"] = {
            "mb_per_second": spread([r["mb_per_second"] for r in runs]),
            "events_per_second": spread([r["events_per_second"] for r in runs]),
        }
    for key in ["open_after_ingest", "open"]:
        for system, runs in results.get(key, {}).items():
            s[f"{key}/{system}"] = {
                "seconds": spread([r["seconds"] for r in runs]),
                "peak_memory_kb": spread([r["peak_rss_kb"] for r in runs]),
            }
    return s


def markdown(results):
    s = results["summary"]
    d = results["dataset"]
    lines = [
        f"**{d['name']}**: {d['events']:,} events, {d['objects']:,} objects, {d['clusters']} clusters, "
        f"{d['late']:,} late ({d['late'] / d['events']:.1%}), seed {d['seed']}; "
        f"medians of {results['runs']} runs (ingest: {results['ingest_runs']}), min–max in brackets; "
        f"{results['machine']['description']}."
        + (" annal's queries and DuckDB's over its native tables ran in alternating rounds "
           "(one round of every case each, one process per system kept open)."
           if results.get("lockstep") else ""),
        "",
        "| case | annal | PostgreSQL | DuckDB (its best layout) | annal / PostgreSQL | annal / DuckDB |",
        "|---|---|---|---|---|---|",
    ]
    short = {v: k for k, v in DUCKDB_LAYOUTS.items()}

    def best_duckdb(get, higher_is_better):
        """The best of DuckDB's layouts (by median) and its name."""
        found = [(get(k), short[k]) for k in DUCKDB_LAYOUTS.values() if get(k)]
        if not found:
            return None, None
        pick = max if higher_is_better else min
        return pick(found, key=lambda f: f[0]["median"])

    def cell(v, fmt):
        if v is None:
            return "—"
        return f"{fmt(v['median'])} ({fmt(v['min'])}–{fmt(v['max'])})"

    def ratio(a, b, higher_is_better):
        if a is None or b is None or not b["median"] or not a["median"]:
            return "—"
        r = a["median"] / b["median"]
        better = r >= 1 if higher_is_better else r <= 1
        return f"{r:.2f}× {'✓' if better else '✗'}" if r >= 0.1 else f"{r:.3f}× {'✓' if better else '✗'}"

    def row(title, key, metric, fmt, higher_is_better):
        get = lambda sys_: s.get(f"{key}/{sys_}", {}).get(metric) if s.get(f"{key}/{sys_}") else None
        a, p = get("annal"), get("postgresql")
        k, layout = best_duckdb(get, higher_is_better)
        where = f" {layout}" if layout and len(layouts_run) > 1 else ""
        lines.append(f"| {title} | {cell(a, fmt)} | {cell(p, fmt)} | {cell(k, fmt)}{where} | "
                     f"{ratio(a, p, higher_is_better)} | {ratio(a, k, higher_is_better)} |")

    layouts_run = [k for k in DUCKDB_LAYOUTS.values() if k in results["queries"]]

    rate = lambda v: f"{v:,.0f}"
    secs = lambda v: f"{v:.3f} s" if v < 10 else f"{v:.1f} s"
    mb = lambda v: f"{v:,.0f}"
    kb = lambda v: f"{v / 1024:,.0f} MB"
    if "ingest/annal" in s or "ingest/postgresql" in s:
        row("ingest, events/s", "ingest", "events_per_second", rate, True)
        row("ingest, bytes on disk per event", "ingest", "bytes_per_event", rate, False)
        row("ingest, peak memory", "ingest", "peak_memory_kb", kb, False)
    for scope, title in [("fleet", "whole fleet"), ("cluster", "one cluster")]:
        row(f"as-of inventory, {title}, p50", f"asof-{scope}", "p50", secs, False)
        row(f"as-of inventory, {title}, p95", f"asof-{scope}", "p95", secs, False)
    if "open_after_ingest/annal" in s:
        row("store open (`annal checkpoint`), right after ingest", "open_after_ingest", "seconds", secs, False)
    if "open/annal" in s:
        row("store open (`annal checkpoint`), after the queries", "open", "seconds", secs, False)
        row("store open, peak memory", "open", "peak_memory_kb", kb, False)
    row("verify the whole log, MB/s", "verify", "mb_per_second", mb, True)
    row("verify the whole log, events/s", "verify", "events_per_second", rate, True)
    names = [n for n in results["queries"].get("annal", {"cases": {}})["cases"]
             if not n.startswith("asof-")]
    for n in names:
        row(f"auditor: {n}, p50", f"query/{n}", "seconds", secs, False)
    q = lambda sys_: s.get(f"query-memory/{sys_}")
    mem = {k: ({"median": q(k), "min": q(k), "max": q(k)} if q(k) else None)
           for k in ["annal", "postgresql", *DUCKDB_LAYOUTS.values()]}
    k, layout = best_duckdb(lambda x: mem[x], False)
    where = f" {layout}" if layout and len(layouts_run) > 1 else ""
    lines.append(f"| queries, peak memory | {cell(mem['annal'], kb)} | {cell(mem['postgresql'], kb)} | "
                 f"{cell(k, kb)}{where} | {ratio(mem['annal'], mem['postgresql'], False)} | "
                 f"{ratio(mem['annal'], k, False)} |")
    lines.append("")
    if len(layouts_run) > 1:
        # Every DuckDB layout, so the choice of the best can be checked.
        lines += ["DuckDB by layout (hive: annal's Hive export; file: one Parquet file per table; "
                  "table: DuckDB's native tables):", "",
                  "| case | " + " | ".join(short[k] for k in layouts_run) + " |",
                  "|---|" + "---|" * len(layouts_run)]
        cases = [(f"as-of inventory, {t}, p50", f"asof-{sc}", "p50") for sc, t in
                 [("fleet", "whole fleet"), ("cluster", "one cluster")]]
        cases += [(f"auditor: {n}, p50", f"query/{n}", "seconds") for n in names]
        for title, key, metric in cases:
            get = lambda sys_: s.get(f"{key}/{sys_}", {}).get(metric) if s.get(f"{key}/{sys_}") else None
            lines.append(f"| {title} | " + " | ".join(cell(get(k), secs) for k in layouts_run) + " |")
        lines.append("| queries, peak memory | " + " | ".join(cell(mem[k], kb) for k in layouts_run) + " |")
        lines.append("")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- plumbing

def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                if l.startswith("model name")), platform.processor())
    memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cores": os.cpu_count(), "memory_gib": round(memory_gb, 1), "cpu": cpu,
            "kernel": platform.release(),
            "description": f"{os.cpu_count()} cores ({cpu}), {memory_gb:.0f} GiB, Linux {platform.release()}"}


def run(cmd, **kw):
    cmd = [str(c) for c in cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stderr[-3000:]}")
    return done.stdout


def timed(cmd, stdin_zstd=None):
    """Wall seconds, max RSS (KB, /usr/bin/time) and stdout of a command,
    optionally reading a zstd file decompressed into its stdin."""
    rss_file = rss_path("timed")
    started = time.perf_counter()
    source = None
    if stdin_zstd:
        source = subprocess.Popen(["zstd", "-dc", str(stdin_zstd)], stdout=subprocess.PIPE)
    stdout = run(with_max_rss(cmd, rss_file), stdin=source.stdout if source else None)
    if source and source.wait() != 0:
        raise SystemExit(f"zstd -dc {stdin_zstd} failed")
    seconds = time.perf_counter() - started
    return seconds, read_max_rss(rss_file), stdout


def rss_path(tag):
    """Where /usr/bin/time writes one command's max RSS."""
    return Path(os.environ.get("TMPDIR", "/tmp")) / f"compare-rss-{os.getpid()}-{tag}"


def with_max_rss(cmd, rss_file):
    """`cmd` run under /usr/bin/time, which writes its max RSS (KB) to `rss_file`."""
    return ["/usr/bin/time", "-f", "%M", "-o", rss_file] + [str(c) for c in cmd]


def read_max_rss(rss_file):
    """The max RSS (KB) `with_max_rss` recorded; the file is removed."""
    rss = int(rss_file.read_text().split()[-1])
    rss_file.unlink()
    return rss


def du(path):
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def sync():
    """Start each ingest with the previous run's writes on disk."""
    os.sync()


def next_day(day):
    import datetime
    d = datetime.date.fromisoformat(day) + datetime.timedelta(days=1)
    return f"{d.isoformat()}T00:00:00Z"


def median(values):
    return statistics.median(values)


def percentile(values, p):
    s = sorted(values)
    rank = max(1, min(len(s), -(-len(s) * p // 1)))
    return s[int(rank) - 1]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--duckdb-worker":
        duckdb_worker(*sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "--duckdb-prepare":
        duckdb_prepare_worker(*sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "--markdown":
        # Re-render a results file's table: compare.py --markdown RESULTS.json
        # (its summary recomputed, so rows added since it was written show).
        results = json.loads(Path(sys.argv[2]).read_text())
        results["summary"] = summarize(results)
        print(markdown(results), end="")
    else:
        main()
