#!/usr/bin/env python3
"""Checks rpc-schema/httpdnsd.openrpc.json.

- its structure against the OpenRPC 1.x document rules (a subset of the meta-schema, written here
  from the specification text: required members, member names, content descriptors, errors,
  example pairings, unique method names, unique params, optional params after required ones,
  unique error codes);
- every schema in it is a valid JSON Schema (draft 7);
- every example's params are valid against the param schemas (required ones present) and its
  result against the result schema;
- when OPENRPC_META_SCHEMA names a meta-schema file (e.g. from the @open-rpc/meta-schema
  package), the document is also validated against it.

Needs python3-jsonschema. Prints "N passed, N failed".
"""
import json
import os
import sys

import jsonschema

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCUMENT = os.path.join(ROOT, "rpc-schema", "httpdnsd.openrpc.json")
MAN_PAGE = os.path.join(ROOT, "packaging", "man", "httpdnsd-rpc.7")


def man_page_methods():
    """The methods httpdnsd-rpc(7) documents: its METHODS section's subsections, in order."""
    with open(MAN_PAGE, encoding="utf-8") as page:
        lines = page.read().split("\n")
    start = lines.index(".SH METHODS")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(".SH "))
    return [line[4:].strip().replace("\\-", "-") for line in lines[start:end] if line.startswith(".SS ")]


API_METHODS = man_page_methods()
API_ERROR_CODES = {-32602, -32603, -32001, -32002, -32003, -32004}

EXTENSIONS = {"^x-": {}}
ERROR = {"type": "object", "required": ["code", "message"], "additionalProperties": False,
         "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "data": {}}}
CONTENT_DESCRIPTOR = {
    "type": "object", "required": ["name", "schema"], "additionalProperties": False,
    "patternProperties": EXTENSIONS,
    "properties": {"name": {"type": "string", "minLength": 1}, "summary": {"type": "string"},
                   "description": {"type": "string"}, "schema": {"type": ["object", "boolean"]},
                   "required": {"type": "boolean"}, "deprecated": {"type": "boolean"}}}
EXAMPLE = {"type": "object", "required": ["name", "value"], "patternProperties": EXTENSIONS,
           "properties": {"name": {"type": "string", "minLength": 1}, "summary": {"type": "string"},
                          "description": {"type": "string"}, "value": {}}}
PAIRING = {"type": "object", "required": ["name", "params"],
           "properties": {"name": {"type": "string", "minLength": 1}, "description": {"type": "string"},
                          "params": {"type": "array", "items": EXAMPLE}, "result": EXAMPLE}}
METHOD = {
    "type": "object", "required": ["name", "params", "result"], "additionalProperties": False,
    "patternProperties": EXTENSIONS,
    "properties": {"name": {"type": "string", "minLength": 1}, "summary": {"type": "string"},
                   "description": {"type": "string"}, "tags": {"type": "array"},
                   "paramStructure": {"enum": ["by-name", "by-position", "either"]},
                   "params": {"type": "array", "items": CONTENT_DESCRIPTOR}, "result": CONTENT_DESCRIPTOR,
                   "errors": {"type": "array", "items": ERROR}, "links": {"type": "array"},
                   "examples": {"type": "array", "items": PAIRING}, "deprecated": {"type": "boolean"},
                   "servers": {"type": "array"}, "externalDocs": {"type": "object"}}}
DOCUMENT_SCHEMA = {
    "type": "object", "required": ["openrpc", "info", "methods"], "additionalProperties": False,
    "patternProperties": EXTENSIONS,
    "properties": {
        "openrpc": {"type": "string", "pattern": r"^1\.[0-4]\.\d+$"},
        "info": {"type": "object", "required": ["title", "version"], "additionalProperties": False,
                 "patternProperties": EXTENSIONS,
                 "properties": {"title": {"type": "string"}, "version": {"type": "string"},
                                "description": {"type": "string"}, "termsOfService": {"type": "string"},
                                "contact": {"type": "object"}, "license": {"type": "object"}}},
        "servers": {"type": "array", "items": {
            "type": "object", "required": ["url"], "additionalProperties": False, "patternProperties": EXTENSIONS,
            "properties": {"url": {"type": "string"}, "name": {"type": "string"}, "summary": {"type": "string"},
                           "description": {"type": "string"}, "variables": {"type": "object"}}}},
        "methods": {"type": "array", "items": METHOD},
        "components": {"type": "object", "additionalProperties": False, "properties": {
            "schemas": {"type": "object"}, "links": {"type": "object"},
            "errors": {"type": "object", "additionalProperties": ERROR},
            "examples": {"type": "object"}, "examplePairings": {"type": "object"},
            "contentDescriptors": {"type": "object"}, "tags": {"type": "object"}}},
        "externalDocs": {"type": "object"},
        "$schema": {"type": "string"}}}


class Checker:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, condition, what):
        if condition:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL " + what, file=sys.stderr)

    def validates(self, instance, schema, what):
        errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(instance), key=str)
        self.check(not errors, what + ("" if not errors else ": " + "; ".join(e.message for e in errors[:3])))


def main():
    with open(DOCUMENT, encoding="utf-8") as f:
        text = f.read()
    doc = json.loads(text)
    c = Checker()
    c.validates(doc, DOCUMENT_SCHEMA, "document structure")
    names = [m["name"] for m in doc["methods"]]
    c.check(names == API_METHODS, "methods are the contract's, in its order: %s" % names)
    c.check(text == json.dumps(doc, indent=2, ensure_ascii=False) + "\n",
            "the file is pretty-printed JSON as json.dumps(indent=2) writes it (UTF-8, one final newline)")
    for method in doc["methods"]:
        name = method["name"]
        c.check(method.get("paramStructure") == "by-name", name + ": paramStructure by-name")
        params = method["params"]
        param_names = [p["name"] for p in params]
        c.check(len(set(param_names)) == len(param_names), name + ": unique param names")
        required = [p.get("required", False) for p in params]
        c.check(required == sorted(required, reverse=True), name + ": optional params after required ones")
        codes = [e["code"] for e in method.get("errors", [])]
        c.check(len(set(codes)) == len(codes), name + ": unique error codes")
        c.check(set(codes) <= API_ERROR_CODES, name + ": error codes are the contract's: %s" % codes)
        c.check(-32603 in codes, name + ": lists -32603")
        for descriptor in params + [method["result"]]:
            try:
                jsonschema.Draft7Validator.check_schema(descriptor["schema"])
                c.check(True, "")
            except jsonschema.SchemaError as error:
                c.check(False, "%s: schema of %s: %s" % (name, descriptor["name"], error.message))
        c.check(len(method.get("examples", [])) >= 1, name + ": has an example")
        by_name = {p["name"]: p for p in params}
        for example in method.get("examples", []):
            label = "%s example %r" % (name, example["name"])
            given = {e["name"]: e["value"] for e in example["params"]}
            c.check(set(given) <= set(by_name), label + ": params are declared: %s" % sorted(given))
            for p in params:
                if p.get("required"):
                    c.check(p["name"] in given, label + ": required param %s present" % p["name"])
            for key, value in given.items():
                if key in by_name:
                    c.validates(value, by_name[key]["schema"], label + ": param " + key)
            c.check("result" in example, label + ": has a result")
            if "result" in example:
                c.validates(example["result"]["value"], method["result"]["schema"], label + ": result")
    meta_path = os.environ.get("OPENRPC_META_SCHEMA")
    if meta_path:
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
        # The meta-schema refers to the JSON Schema meta-schema by URL; any schema is accepted for it here
        # (each schema was checked against draft 7 above).
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT7
        registry = Registry().with_resources([
            (uri, Resource.from_contents(True, default_specification=DRAFT7))
            for uri in ("https://meta.json-schema.tools", "https://meta.json-schema.tools/")])
        errors = list(jsonschema.Draft7Validator(meta, registry=registry).iter_errors(doc))
        c.check(not errors, "meta-schema %s: %s" % (meta_path, "; ".join(e.message for e in errors[:3])))
    print("validate_openrpc: %d passed, %d failed" % (c.passed, c.failed))
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
