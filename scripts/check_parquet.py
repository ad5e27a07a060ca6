"""Reads annal's Parquet export with pyarrow and DuckDB, independently of
annal's own reader, and checks it against the ledger:

- every exported table has as many rows (pyarrow and DuckDB both) as
  `annal sql "SELECT count(*) FROM <table>"` reports, with Hive partitions
  day=YYYY-MM-DD/cluster=ID;
- DuckDB's window query over the exported `objects` (each object's latest
  version, deletions dropped) names exactly the objects `annal inventory`
  lists now.

Usage: python3 scripts/check_parquet.py ANNAL DATA EXPORT_DIR
"""
import json
import pathlib
import subprocess
import sys

import duckdb
import pyarrow.dataset as ds

TABLES = ["events", "objects", "managed_fields", "clusters", "revisions"]


def annal(binary, data, *args):
    out = subprocess.run([binary, "--data", data, "-o", "json", *args],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    binary, data, export = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
    con = duckdb.connect()
    failures = []
    for table in TABLES:
        want = annal(binary, data, "sql", f"SELECT count(*) AS n FROM {table}")[0]["n"]
        files = list((export / table).rglob("*.parquet"))
        bad = [f for f in files if not (f.parent.name.startswith("cluster=")
                                        and f.parent.parent.name.startswith("day="))]
        if bad:
            failures.append(f"{table}: files outside day=/cluster= partitions: {bad[:3]}")
        arrow_rows = ds.dataset(export / table, format="parquet", partitioning="hive").count_rows() if files else 0
        duck_rows = con.execute(
            f"SELECT count(*) FROM read_parquet('{export}/{table}/**/*.parquet', hive_partitioning = true)"
        ).fetchone()[0] if files else 0
        print(f"parquet {table}: annal {want}, pyarrow {arrow_rows}, duckdb {duck_rows}, {len(files)} files")
        if not (want == arrow_rows == duck_rows):
            failures.append(f"{table}: annal {want}, pyarrow {arrow_rows}, duckdb {duck_rows}")
    live = con.execute(f"""
        SELECT cluster, kind, namespace, name FROM (
          SELECT *, row_number() OVER (
            PARTITION BY cluster, "group", kind, namespace, name
            ORDER BY valid_from DESC, TRY_CAST(resource_version AS BIGINT) DESC NULLS LAST, "index" DESC) AS rn
          FROM read_parquet('{export}/objects/**/*.parquet', hive_partitioning = true))
        WHERE rn = 1 AND NOT deleted""").fetchall()
    duck = sorted(tuple(r) for r in live)
    inventory = sorted((r["cluster"], r["kind"], r["namespace"], r["name"])
                       for r in annal(binary, data, "inventory", "--at", "2100-01-01T00:00:00Z")["objects"])
    print(f"parquet objects: DuckDB's latest-version window query finds {len(duck)} live objects, annal inventory {len(inventory)}")
    if duck != inventory:
        failures.append(f"live objects differ: only DuckDB {sorted(set(duck) - set(inventory))[:5]}, "
                        f"only annal {sorted(set(inventory) - set(duck))[:5]}")
    if failures:
        print("parquet check: FAILED\n  " + "\n  ".join(failures), file=sys.stderr)
        sys.exit(1)
    print("parquet check: pyarrow and DuckDB read every exported table as annal counts it")


if __name__ == "__main__":
    main()
