"""SSIMULACRA2 scores of (reference, distorted) PNG pairs by PyPI's ssimulacra2 (the reference
implementation the metric tests compare ImageKit's with). Reads a JSON list of
[reference_path, distorted_path] pairs; prints one score per line."""
import json, sys

from ssimulacra2 import compute_ssimulacra2

for reference, distorted in json.load(open(sys.argv[1])):
    print(f"{compute_ssimulacra2(reference, distorted):.6f}", flush=True)
