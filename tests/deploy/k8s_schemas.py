"""Offline schema checks of the Kubernetes manifests in deploy/k8s.

Built-in kinds (Namespace, ConfigMap, DaemonSet, ...) are checked by ``kubernetes-validate``
(PyPI; it bundles JSON schemas generated from Kubernetes' own OpenAPI spec for each release) in
strict mode, where an unknown field is an error, against each of :data:`K8S_VERSIONS`.

KServe kinds are checked against the ``openAPIV3Schema`` of KServe's CRDs, vendored in
``schemas/`` by ``vendor_kserve.py`` (each file names its source URL and commit). The API server
prunes or rejects fields a structural schema does not declare; to catch a misspelt field here
too, every object schema that declares ``properties`` and neither ``additionalProperties`` nor
``x-kubernetes-preserve-unknown-fields`` is closed (``additionalProperties: false``) before
validating. A KServe object's ``metadata`` is checked as Kubernetes' ObjectMeta.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml
from kubernetes_validate.utils import SchemaNotFoundError

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "deploy" / "k8s"
SCHEMAS = Path(__file__).parent / "schemas"
# The oldest Kubernetes release the manifests are meant for, and a recent one.
K8S_VERSIONS = ("1.30", "1.35")


def documents(path: Path) -> list[dict[str, Any]]:
    """The YAML documents of one manifest file (empty documents skipped)."""
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def all_documents() -> Iterator[tuple[str, dict[str, Any]]]:
    """(``file#index kind/name``, document) for every manifest in deploy/k8s."""
    for path in sorted(MANIFESTS.glob("*.yaml")):
        for i, doc in enumerate(documents(path)):
            name = doc.get("metadata", {}).get("name", "?")
            yield f"{path.name}#{i} {doc.get('kind')}/{name}", doc


def _close(node: Any) -> Any:
    """A copy of a structural schema with every declared-properties object closed."""
    if isinstance(node, list):
        return [_close(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = dict(node)
    if "properties" in node:
        out["properties"] = {k: _close(v) for k, v in node["properties"].items()}
        if "additionalProperties" not in node and not node.get(
            "x-kubernetes-preserve-unknown-fields"
        ):
            out["additionalProperties"] = False
    for key in ("items", "additionalProperties", "not"):
        if isinstance(node.get(key), dict):
            out[key] = _close(node[key])
    for key in ("allOf", "anyOf", "oneOf"):
        if key in node:
            out[key] = _close(node[key])
    return out


@functools.cache
def kserve_schemas() -> dict[str, dict[str, Any]]:
    """apiVersion/kind -> the vendored file (source, commit, closed openAPIV3Schema)."""
    out = {}
    for path in sorted(SCHEMAS.glob("*.json")):
        vendored = json.loads(path.read_text())
        vendored["openAPIV3Schema"] = _close(vendored["openAPIV3Schema"])
        out[f"{vendored['group']}/{vendored['version']}/{vendored['kind']}"] = vendored
    return out


def _messages(error: jsonschema.ValidationError) -> list[str]:
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return [f"{where}: {error.message}"]


def problems(doc: dict[str, Any]) -> list[str]:
    """Every schema violation of one manifest document; empty when it is valid."""
    api, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api, str) or not isinstance(kind, str):
        return ["(root): apiVersion and kind must be strings"]
    found: list[str] = []
    crd = kserve_schemas().get(f"{api}/{kind}")
    if api.startswith("serving.kserve.io/") and crd is None:
        return [f"{api} {kind}: no vendored KServe schema (tests/deploy/vendor_kserve.py)"]
    if crd is not None:
        validator = jsonschema.Draft7Validator(crd["openAPIV3Schema"])
        for error in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            found += _messages(error)
        # The CRD's metadata is only "type: object"; the API server checks it as ObjectMeta.
        wrapper = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": doc.get("metadata", {})}
        checked = wrapper
    else:
        checked = doc
    for version in K8S_VERSIONS:
        try:
            kubernetes_validate.validate(checked, version, strict=True)
        except SchemaNotFoundError as err:
            return [f"{api} {kind}: no Kubernetes {version} schema: {err.message}"]
        except jsonschema.ValidationError as err:
            found += [f"k8s {version}: {m}" for m in _messages(err)]
    return found
