#!/usr/bin/env python3
"""Chooses the corpus subset kept in the repository (Tests/Corpus) from the full corpora.

    scripts/make-test-corpus.py [SHARED]        # SHARED defaults to ../shared beside the checkout

`make test` runs the conformance suites on Tests/Corpus when the full corpora
(`../shared/corpus`, `../shared/formats-corpus`, or IMAGEKIT_CORPUS / IMAGEKIT_FORMATS_CORPUS)
are not there. The subset is chosen by rule, so that it can be made again when the full corpora
change, and so that it covers every check the suites make:

1. every file a test names (found by reading Tests/ for corpus paths);
2. for every group of the manifest — format, valid or not, upstream suite, kind, comparison,
   and every feature tag (`mode=P`, `progressive`, `loop=0`, `disposal=2`, `apng_blend=1`, ...) —
   the smallest file of the group, references included;
3. then every other file whose bytes (with its reference PNGs) stay under SIZE_CAP.

The manifests, SOURCES.tsv and the gif-test-suite expected frames of the chosen files are copied
with them; the rows keep each file's source, commit and licence.
"""
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SIZE_CAP = 12 * 1024


def read_tsv(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    header = lines[0].split("\t")
    rows = [dict(zip(header, line.split("\t"))) for line in lines[1:] if line.strip()]
    return header, rows


def write_tsv(path, header, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\t".join(header) + "\n")
        for row in rows:
            f.write("\t".join(row.get(column, "") for column in header) + "\n")


def named_by_tests():
    """Corpus paths written in the tests (`"png/pngsuite/basn6a08.png"`, `Landscape_\\(n).jpg`)."""
    names = set()
    pattern = re.compile(r'"((?:gif|jpeg|png|webp|other|invalid|avif|bmp|heif|icc|ico|jxl|tiff)/[^"]+)"')
    for folder, _, files in os.walk(os.path.join(REPO, "Tests")):
        for name in files:
            if name.endswith((".swift", ".py")):
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                    for match in pattern.finditer(f.read()):
                        names.add(match.group(1))
    return names


def matches(path, names):
    for name in names:
        if "\\(" in name:
            prefix, _, rest = name.partition("\\(")
            suffix = rest.partition(")")[2]
            if path.startswith(prefix) and path.endswith(suffix):
                return True
        elif path == name:
            return True
    return False


def choose(rows, size_of, groups_of, names):
    chosen = {row["path"] for row in rows if matches(row["path"], names)}
    smallest = {}
    for row in rows:
        for group in groups_of(row):
            best = smallest.get(group)
            if best is None or size_of(row) < size_of(best):
                smallest[group] = row
    chosen |= {row["path"] for row in smallest.values()}
    chosen |= {row["path"] for row in rows if size_of(row) <= SIZE_CAP}
    return [row for row in rows if row["path"] in chosen]


def conformance(shared, out, names):
    source = os.path.join(shared, "corpus")
    header, rows = read_tsv(os.path.join(source, "MANIFEST.tsv"))
    _, sources = read_tsv(os.path.join(source, "SOURCES.tsv"))
    sources_header = open(os.path.join(source, "SOURCES.tsv"), encoding="utf-8").readline().rstrip("\n").split("\t")

    def frames_of(row):  # gif-test-suite files are compared with the suite's expected frames
        if not row["path"].startswith("gif/gif-test-suite/") or "/frames/" in row["path"]:
            return []
        stem = os.path.splitext(os.path.basename(row["path"]))[0]
        return [r["path"] for r in rows if r["path"].startswith(f"gif/gif-test-suite/frames/{stem}-")]

    def size_of(row):
        return sum(os.path.getsize(os.path.join(source, p)) for p in [row["path"], *frames_of(row)])

    def groups_of(row):
        suite = "/".join(row["path"].split("/")[:2])
        tags = row["features"].partition(" | ")[2]
        groups = [("suite", suite, row["valid"]), ("format", row["format"], row["valid"])]
        groups += [("tag", row["format"], tag.strip()) for tag in re.split(r",(?![^=,]*\))", tags) if tag.strip()]
        return groups

    chosen = choose(rows, size_of, groups_of, names)
    paths = {row["path"] for row in chosen}
    for row in chosen:
        paths.update(frames_of(row))
    paths.update(p for p in ("webp/libwebp-test-data/reference/grid.png", "webp/libwebp-test-data/reference/peak.png"))
    kept = [row for row in rows if row["path"] in paths]
    copy(source, out, [row["path"] for row in kept])
    write_tsv(os.path.join(out, "MANIFEST.tsv"), header, kept)
    write_tsv(os.path.join(out, "SOURCES.tsv"), sources_header, [r for r in sources if r["path"] in paths])
    return kept, rows


def formats(shared, out, names):
    source = os.path.join(shared, "formats-corpus")
    header, rows = read_tsv(os.path.join(source, "MANIFEST.tsv"))
    _, sources = read_tsv(os.path.join(source, "SOURCES.tsv"))
    sources_header = open(os.path.join(source, "SOURCES.tsv"), encoding="utf-8").readline().rstrip("\n").split("\t")

    def references(row):
        folder = os.path.join(source, "ref", os.path.dirname(row["path"]))
        base = os.path.basename(row["path"])
        if not os.path.isdir(folder):
            return []
        return [os.path.join("ref", os.path.dirname(row["path"]), name) for name in sorted(os.listdir(folder))
                if name.startswith(base + ".") and name.endswith(".png")]

    def size_of(row):
        return sum(os.path.getsize(os.path.join(source, p)) for p in [row["path"], *references(row)])

    def groups_of(row):
        suite = "/".join(row["path"].split("/")[:2])
        groups = [("suite", suite, row["valid"]), ("kind", row["format"], row["kind"]),
                  ("compare", row["format"], row["compare"])]
        if row["colour"]:
            groups.append(("colour", row["format"], row["colour"].split(":")[0]))
        if row["also"]:
            groups.append(("also", row["format"], row["also"]))
        return groups

    kept = choose(rows, size_of, groups_of, names)
    files = []
    for row in kept:
        files += [row["path"], *references(row)]
    copy(source, out, files)
    paths = {row["path"] for row in kept}
    write_tsv(os.path.join(out, "MANIFEST.tsv"), header, kept)
    write_tsv(os.path.join(out, "SOURCES.tsv"), sources_header, [r for r in sources if r["path"] in paths])
    return kept, rows


def copy(source, out, paths):
    for path in paths:
        target = os.path.join(out, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(source, path), target)
        os.chmod(target, 0o644)


def folder_bytes(folder):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(folder) for f in files)


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "..", "shared")
    names = named_by_tests()
    root = os.path.join(REPO, "Tests", "Corpus")
    for name in ("conformance", "formats"):
        folder = os.path.join(root, name)
        for entry in os.listdir(folder) if os.path.isdir(folder) else []:
            if entry != "README.md":
                path = os.path.join(folder, entry)
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    kept, rows = conformance(shared, os.path.join(root, "conformance"), names)
    print(f"conformance: {len(kept)} of {len(rows)} files, {folder_bytes(os.path.join(root, 'conformance')) / 1e6:.2f} MB")
    kept, rows = formats(shared, os.path.join(root, "formats"), names)
    print(f"formats: {len(kept)} of {len(rows)} files, {folder_bytes(os.path.join(root, 'formats')) / 1e6:.2f} MB")
    missing = [name for name in names if "\\(" not in name and not name.endswith("/")
               and not any(os.path.exists(os.path.join(root, sub, name)) for sub in ("conformance", "formats"))
               and not name.startswith("other/mislabeled")]
    if missing:
        print("named by tests but not in either corpus:", ", ".join(sorted(missing)))


if __name__ == "__main__":
    main()
