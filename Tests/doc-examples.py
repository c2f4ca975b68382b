#!/usr/bin/env python3
"""The Swift examples of the README and the DocC articles, for Tests/consumer-check.sh to compile.

A block that begins with `import` is a complete program: it is written, as pasted, to
OUT/Sources/NAME/main.swift, and NAME printed as `MODULE NAME` (MODULE: ImageKitServer when it
imports it, else ImageKit), so that the check compiles it against that product. A block whose first
line is a comment saying "Fragment" is not meant to compile alone (the comment says what surrounds
it) and is skipped. Any other Swift block is an error: an example must be one or the other.

    Tests/doc-examples.py REPO OUT
"""
import glob
import os
import re
import sys


def documents(repo):
    yield os.path.join(repo, "README.md")
    yield from sorted(glob.glob(os.path.join(repo, "Sources", "*", "*.docc", "*.md")))
    yield from sorted(glob.glob(os.path.join(repo, "docs", "*.md")))


def main():
    repo, out = sys.argv[1], sys.argv[2]
    unmarked = []
    fragments = 0
    for path in documents(repo):
        text = open(path, encoding="utf-8").read()
        relative = os.path.relpath(path, repo)
        for match in re.finditer(r"^```swift\n(.*?)^```", text, re.S | re.M):
            body = match.group(1)
            line = text.count("\n", 0, match.start()) + 1
            first = body.lstrip().split("\n", 1)[0]
            if first.startswith("import "):
                name = "Example_" + re.sub(r"[^A-Za-z0-9]", "_", os.path.splitext(os.path.basename(path))[0]) + f"_{line}"
                module = "ImageKitServer" if re.search(r"^import ImageKitServer$", body, re.M) else "ImageKit"
                os.makedirs(os.path.join(out, "Sources", name), exist_ok=True)
                with open(os.path.join(out, "Sources", name, "main.swift"), "w", encoding="utf-8") as file:
                    file.write(body)
                print(module, name, f"{relative}:{line}")
            elif re.match(r"//.*\bfragment\b", first, re.I):
                fragments += 1
            else:
                unmarked.append(f"{relative}:{line}")
    for place in unmarked:
        print(f"doc-examples: {place}: a Swift block that neither begins with `import` (a complete "
              "program) nor says it is a fragment in its first line", file=sys.stderr)
    print(f"doc-examples: {fragments} fragments skipped", file=sys.stderr)
    sys.exit(1 if unmarked else 0)


if __name__ == "__main__":
    main()
