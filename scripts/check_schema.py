#!/usr/bin/env python3
"""Checks the JSON Schema against annal's own examples, independently of Rust.

Every line of examples/quickstart.jsonl must validate against
schemas/json/envelope.v1.schema.json, and a set of broken variants of them
must not (the same mistakes the Rust validator rejects). With a ledger
directory as argument, every event stored in it (the `event` of each leaf
in DATA/log/*.jsonl) must validate too: that checks what the format
adapters emit against the published schema. Needs `jsonschema`.
"""
import copy
import glob
import json
import os
import sys

import jsonschema

schema = json.load(open("schemas/json/envelope.v1.schema.json"))
validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
events = [json.loads(line) for line in open("examples/quickstart.jsonl")]

failures = 0
for event in events:
    errors = list(validator.iter_errors(event))
    if errors:
        failures += 1
        print(f"valid example {event['id']} rejected: {errors[0].message}")


def broken(event_type, mutate):
    event = copy.deepcopy(next(e for e in events if e["type"] == event_type))
    mutate(event)
    return event


bad = {
    "unknown top-level field": broken("app.health", lambda e: e.update(clutser="x")),
    "missing cluster": broken("app.health", lambda e: e.pop("cluster")),
    "unknown health status": broken("app.health", lambda e: e["data"].update(status="Fine")),
    "object without metadata.name": broken("object.observed", lambda e: e["data"]["metadata"].pop("name")),
    "inventory entry without name": broken("app.inventory", lambda e: e["data"]["entries"][0].pop("name")),
    "wrong schema tag": broken("cluster.heartbeat", lambda e: e.update(schema="annal.event/v2")),
    "unknown type": broken("cluster.heartbeat", lambda e: e.update(type="cluster.created")),
}
for name, event in bad.items():
    if validator.is_valid(event):
        failures += 1
        print(f"broken example accepted: {name}")

stored = 0
if len(sys.argv) > 1:
    by_type = {}
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "log", "*.jsonl"))):
        for line in open(path):
            event = json.loads(line)["event"]
            stored += 1
            by_type[event["type"]] = by_type.get(event["type"], 0) + 1
            errors = list(validator.iter_errors(event))
            if errors:
                failures += 1
                print(f"stored event {event['id']} ({event['type']}) rejected: {errors[0].message} at {list(errors[0].path)}")
    if stored == 0:
        failures += 1
        print(f"no stored events under {sys.argv[1]}")
    print("stored events checked: " + ", ".join(f"{t} {n}" for t, n in sorted(by_type.items())))

print(f"schema check: {len(events)} examples and {stored} stored events valid, {len(bad)} broken variants rejected" if not failures else "schema check: FAILED")
sys.exit(1 if failures else 0)
