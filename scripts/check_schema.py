#!/usr/bin/env python3
"""Checks the JSON Schema against annal's own examples, independently of Rust.

Every line of examples/quickstart.jsonl must validate against
schemas/json/envelope.v1.schema.json, and a set of broken variants of them
must not (the same mistakes the Rust validator rejects). Needs `jsonschema`.
"""
import copy
import json
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

print(f"schema check: {len(events)} examples valid, {len(bad)} broken variants rejected" if not failures else "schema check: FAILED")
sys.exit(1 if failures else 0)
