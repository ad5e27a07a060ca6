"""DuckDB's answer to annal's inventory_at(T), over annal's Parquet export.

For each instant the annal benchmark timed (read from its results JSON),
DuckDB picks each object's latest version at or before T with a window
query over the exported `objects` table (the question a team without annal
would ask of a Parquet dump), keeps those that are not deletions, and
fetches the rows as Arrow. Row counts must equal annal's. Adds a "duckdb"
section to the results file and prints p50/p95 and the ratios.

Usage: python3 bench/duckdb_inventory.py EXPORT_DIR RESULTS_JSON
"""
import json
import sys
import time

import duckdb


def percentile(values, p):
    s = sorted(values)
    rank = max(1, min(len(s), -(-len(s) * p // 1)))
    return s[int(rank) - 1]


def main():
    export, results_path = sys.argv[1], sys.argv[2]
    results = json.load(open(results_path))
    con = duckdb.connect()
    con.execute(f"PRAGMA threads={2}")
    source = f"read_parquet('{export}/objects/**/*.parquet', hive_partitioning = true)"
    out = {}
    for question in results["inventory_at"]:
        seconds, rows, mismatches = [], [], 0
        for instant, annal_rows in zip(question["instants"], question["rows"]):
            parts = instant.split(" ")
            where = f"valid_from <= TIMESTAMPTZ '{parts[0]}'"
            if len(parts) > 1:
                where += f" AND cluster = '{parts[1]}'"
            sql = f"""
                SELECT * EXCLUDE (rn) FROM (
                  SELECT *, row_number() OVER (
                    PARTITION BY cluster, "group", kind, namespace, name
                    ORDER BY valid_from DESC, TRY_CAST(resource_version AS BIGINT) DESC NULLS LAST, "index" DESC
                  ) AS rn
                  FROM {source} WHERE {where}
                ) WHERE rn = 1 AND NOT deleted"""
            started = time.perf_counter()
            result = con.execute(sql)
            # DuckDB 2 renamed fetch_arrow_table to to_arrow_table.
            fetch = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
            table = fetch()
            seconds.append(time.perf_counter() - started)
            rows.append(table.num_rows)
            if table.num_rows != annal_rows:
                mismatches += 1
        entry = {
            "seconds": seconds,
            "rows": rows,
            "p50": percentile(seconds, 0.5),
            "p95": percentile(seconds, 0.95),
            "row_count_mismatches": mismatches,
        }
        out[question["question"]] = entry
        ratio = question["p50"] / entry["p50"] if entry["p50"] else float("nan")
        print(
            f"{question['question']:<12} duckdb p50 {entry['p50']:.3f}s p95 {entry['p95']:.3f}s | "
            f"annal p50 {question['p50']:.3f}s p95 {question['p95']:.3f}s | "
            f"annal/duckdb p50 {ratio:.3f} | row counts differ at {mismatches} instants"
        )
    results["duckdb"] = {"version": duckdb.__version__, "questions": out}
    json.dump(results, open(results_path, "w"), indent=2)


if __name__ == "__main__":
    main()
