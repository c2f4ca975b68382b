#!/usr/bin/env python3
"""Every public declaration of ImageKit's modules has a `///` summary: checked on the symbol
graphs that `swift package generate-documentation` extracts (`make docs`).

A declaration counts as documented when it has its own doc comment, or when it implements a
documented requirement of a protocol its type conforms to (DocC shows the requirement's text
there). Symbols the compiler adds (`!=`, `Comparable`'s ranges, an `OptionSet`'s set algebra) have
no source location in the package and are not counted. Public docs carry no spec IDs (`MGR-24`)
or `DESIGN §` references: those documents are not in the repository.

    python3 Tests/check-docs.py .build-docs ImageKit ImageKitServer   # exit 1 and a list when one is missing
"""
import glob
import json
import os
import re
import sys

# Requirements of the standard library's and Foundation's protocols, whose documentation DocC
# shows on a conforming type's implementation.
STANDARD_REQUIREMENTS = {"description", "debugDescription", "hash(into:)", "==(_:_:)", "<(_:_:)", "init(from:)",
                         "encode(to:)", "rawValue", "init(rawValue:)", "makeIterator()", "next()",
                         "errorDescription", "id", "now", "minimumResolution", "sleep(until:tolerance:)",
                         "advanced(by:)", "duration(to:)", "makeAsyncIterator()"}
SPEC_ID = re.compile(r"\b[A-Z]{2,5}-\d{2}\b|DESIGN §")


def symbol_graph(scratch, module):
    paths = glob.glob(os.path.join(scratch, "**", "extracted-symbols", "**", f"{module}.symbols.json"), recursive=True)
    if not paths:
        sys.exit(f"check-docs: no symbol graph for {module} under {scratch} (run `make docs` first)")
    return json.load(open(max(paths, key=os.path.getmtime)))


def problems(graph, root):
    symbols = {s["identifier"]["precise"]: s for s in graph["symbols"]}
    member_of, conforms, requirements = {}, {}, {}
    for r in graph["relationships"]:
        if r["kind"] == "memberOf":
            member_of[r["source"]] = r["target"]
        elif r["kind"] == "conformsTo":
            conforms.setdefault(r["source"], set()).add(r["target"])
        elif r["kind"] == "requirementOf":
            requirements.setdefault(r["target"], set()).add(r["source"])

    def documented(identifier):
        symbol = symbols.get(identifier)
        return bool(symbol and symbol.get("docComment", {}).get("lines"))

    def inherits_docs(symbol):
        owner = member_of.get(symbol["identifier"]["precise"])
        name = symbol["names"]["title"]
        if name in STANDARD_REQUIREMENTS and any(p not in symbols for p in conforms.get(owner, ())):
            return True
        for protocol in conforms.get(owner, set()) | ({owner} if owner in requirements else set()):
            for requirement in requirements.get(protocol, ()):
                if symbols[requirement]["names"]["title"] == name and documented(requirement):
                    return True
        return False

    found = []
    for symbol in graph["symbols"]:
        location = symbol.get("location", {}).get("uri", "")
        if "/Sources/" not in location or "/.build" in location:
            continue
        where = os.path.relpath(location.replace("file://", ""), root) + ":" + str(symbol["location"]["position"]["line"] + 1)
        path = ".".join(symbol["pathComponents"])
        text = "\n".join(line["text"] for line in symbol.get("docComment", {}).get("lines", []))
        if not text.strip():
            if not inherits_docs(symbol):
                found.append(f"{where}: {path}: no /// summary")
        elif SPEC_ID.search(text):
            found.append(f"{where}: {path}: names '{SPEC_ID.search(text).group(0)}' (keep spec IDs in // comments)")
    return found


def main():
    scratch = sys.argv[1] if len(sys.argv) > 1 else ".build-docs"
    modules = sys.argv[2:] or ["ImageKit"]
    root = os.getcwd()
    all_problems = []
    for module in modules:
        graph = symbol_graph(scratch, module)
        found = problems(graph, root)
        counted = sum(1 for s in graph["symbols"] if "/Sources/" in s.get("location", {}).get("uri", ""))
        print(f"check-docs: {module}: {counted} public declarations, {len(found)} problems")
        all_problems += found
    for line in sorted(all_problems):
        print(line)
    sys.exit(1 if all_problems else 0)


if __name__ == "__main__":
    main()
