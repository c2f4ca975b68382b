#!/usr/bin/env python3
"""ImageKit's and ImageKitServer's layer rules, checked: a file may name only types of its own layer and of the layers
below it.

    Core ← Pixels ← Color ← Coding+Animation ← Transforming ← (Caching, Loading) ← Manager

`Coding+Animation` is one layer of two folders (a coder builds its lazy animation, the animation
drives its coder's cursor); `(Caching, Loading)` are peers: neither may name the other's types. The types of a
layer are those declared at the top level of its files (struct, class, enum, protocol, actor,
typealias); a reference is the type's name as a whole word outside comments and string literals.
Extensions that add members across layers are not seen (a grep cannot tell whose member is
called); keep them in the layer of the type they extend or above it.

    python3 Tests/check-layers.py [Sources/MODULE …]     # exit 1 and a list when an arrow points up

ImageKitServer has its own rule (MODULES below); both are checked when no folder is given.
"""
import os
import re
import sys

# Levels from the bottom; in a level, units (folders in one unit share a layer) that are peers.
MODULES = {
    "ImageKit": [[["Core"]], [["Pixels"]], [["Color"]], [["Coding", "Animation"]], [["Transforming"]],
                 [["Caching"], ["Loading"]], [["Manager"]]],
    # The service: the operations (and its one error type) at the bottom, the signatures, the URL
    # grammars, then the pipeline and the source fetcher (peers: processing never fetches,
    # fetching never decodes), the service that ties them, HTTP on top.
    "ImageKitServer": [[["Operations"]], [["Signing"]], [["Grammars"]], [["Pipeline"], ["Fetching"]], [["Service"]],
                       [["HTTP"]]],
}
DECLARATION = re.compile(r"^(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private|final|"
                         r"indirect|nonisolated)\s+)*(?:struct|class|enum|protocol|actor|typealias)\s+(\w+)", re.M)


def code_only(text):
    """The text without comments and string literals (so docs may name any type)."""
    text = re.sub(r'"""[\s\S]*?"""', '""', text)
    text = re.sub(r"/\*[\s\S]*?\*/", "", text)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def picture(layers):
    return " ← ".join("(" + ", ".join("+".join(u) for u in level) + ")" if len(level) > 1 else "+".join(level[0])
                      for level in layers)


def main():
    sources = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources")
    roots = sys.argv[1:] or [os.path.join(sources, module) for module in MODULES]
    return max(check(root) for root in roots)


def check(root):
    layers = MODULES[os.path.basename(os.path.normpath(root))]
    RANK = {folder: rank for rank, level in enumerate(layers) for unit in level for folder in unit}
    UNIT = {folder: "+".join(unit) for level in layers for unit in level for folder in unit}
    PICTURE = picture(layers)
    files = {}
    for folder in os.listdir(root):
        path = os.path.join(root, folder)
        if not os.path.isdir(path) or folder.endswith(".docc"):  # the DocC catalog holds no code
            continue
        if folder not in RANK:
            print(f"check-layers: {folder}/ is in no layer; add it to MODULES")
            return 1
        for directory, _, names in os.walk(path):
            for name in names:
                if name.endswith(".swift"):
                    with open(os.path.join(directory, name)) as f:
                        files[os.path.join(directory, name)] = (folder, code_only(f.read()))
    owner = {}
    for path, (folder, text) in files.items():
        for name in DECLARATION.findall(text):
            owner.setdefault(name, folder)
    problems = []
    for path, (folder, text) in sorted(files.items()):
        words = set(re.findall(r"\b[A-Z]\w*\b", text))
        for name in sorted(words):
            other = owner.get(name)
            if other is None or UNIT[other] == UNIT[folder] or RANK[other] < RANK[folder]:
                continue
            problems.append(f"{os.path.relpath(path, root)} ({folder}) names {name} ({other})")
    for line in problems:
        print(f"check-layers: {line}")
    if problems:
        print(f"check-layers: {len(problems)} references point up or across the layers ({PICTURE})")
        return 1
    print(f"check-layers: {len(files)} files follow {PICTURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
