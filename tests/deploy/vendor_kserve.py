"""Vendor the KServe CRD schemas that tests/deploy checks the manifests against.

Run by hand, never by the tests (they read only the JSON it writes)::

    python tests/deploy/vendor_kserve.py KSERVE_CHECKOUT COMMIT

``KSERVE_CHECKOUT`` is a work tree of https://github.com/kserve/kserve at ``COMMIT``. For each
CRD of :data:`CRDS` it takes ``spec.versions[name].schema.openAPIV3Schema`` from
``config/crd/full/`` and writes ``schemas/<kind>-<version>.json``: the schema as upstream has it
except that ``description`` strings are dropped (they do not take part in validation) and the
subtrees named in :data:`PRUNE` are removed, to keep the file small; a manifest that uses a
removed field then fails the check ("not vendored") instead of passing unchecked.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent / "schemas"
CRDS = {
    "ServingRuntime": ("serving.kserve.io_servingruntimes.yaml", "v1alpha1"),
    "InferenceService": ("serving.kserve.io_inferenceservices.yaml", "v1beta1"),
}
# InferenceService: only the predictor is used by deploy/k8s; the other components are each
# as large as it (the schema is 640 kB without them, 250 kB with the predictor only).
PRUNE = {"InferenceService": [("spec", "canary"), ("spec", "explainer"), ("spec", "transformer")]}


def _strip(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def vendor(checkout: Path, commit: str) -> None:
    for kind, (file, version) in CRDS.items():
        path = checkout / "config" / "crd" / "full" / file
        crd = yaml.safe_load(path.read_text())
        (entry,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
        schema = _strip(entry["schema"]["openAPIV3Schema"])
        for parent, child in PRUNE.get(kind, []):
            del schema["properties"][parent]["properties"][child]
        out = {
            "source": f"https://github.com/kserve/kserve/blob/{commit}/config/crd/full/{file}",
            "commit": commit,
            "group": crd["spec"]["group"],
            "kind": kind,
            "version": version,
            "pruned": [".".join(p) for p in PRUNE.get(kind, [])],
            "openAPIV3Schema": schema,
        }
        target = HERE / f"{kind.lower()}-{version}.json"
        target.write_text(json.dumps(out, sort_keys=True, separators=(",", ":")) + "\n")
        print(f"{target}: {target.stat().st_size} bytes")


if __name__ == "__main__":
    vendor(Path(sys.argv[1]), sys.argv[2])
