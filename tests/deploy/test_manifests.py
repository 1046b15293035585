"""deploy/k8s: every manifest passes its schema check (k8s_schemas.py), a broken copy does not,
and the lanes commands in them are accepted by lanes' own CLI and configuration checks. Nothing
here talks to a cluster; docs/deploy.md says what that leaves untested."""

from __future__ import annotations

import argparse
import copy
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from k8s_schemas import MANIFESTS, all_documents, documents, kserve_schemas, problems

from lanes.cli import build_parser
from lanes.serving.config import ServeConfig, resolve

DOCS = dict(all_documents())


def one(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        d for d in DOCS.values() if d["kind"] == kind and name in (None, d["metadata"]["name"])
    ]
    assert len(found) == 1, (kind, name, len(found))
    return copy.deepcopy(found[0])


def sample(kind: str) -> dict[str, Any]:
    """A copy of the one manifest of this kind (of the InferenceServices, ocr-chars)."""
    return one(kind, "ocr-chars" if kind == "InferenceService" else None)


def runtime_container() -> dict[str, Any]:
    (container,) = one("ServingRuntime")["spec"]["containers"]
    return container


def arbiter_container() -> dict[str, Any]:
    (container,) = one("DaemonSet")["spec"]["template"]["spec"]["containers"]
    return container


def argv(container: dict[str, Any], env: dict[str, str]) -> list[str]:
    """The container's command line after the kubelet's $(VAR) expansion, less ``lanes``."""
    words = [*container["command"], *container["args"]]
    assert words[0] == "lanes"
    return [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], w) for w in words[1:]]


def flag(words: list[str], name: str) -> str:
    return words[words.index(name) + 1]


def literal_env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def test_every_manifest_file_holds_documents() -> None:
    assert {p.name for p in MANIFESTS.glob("*.yaml")} == {
        "namespace.yaml",
        "arbiter.yaml",
        "servingruntime.yaml",
        "inferenceservice.yaml",
    }
    assert all(documents(p) for p in MANIFESTS.glob("*.yaml"))


@pytest.mark.parametrize("name", sorted(DOCS))
def test_manifest_passes_its_schema(name: str) -> None:
    assert problems(DOCS[name]) == []


def test_vendored_kserve_schemas_name_their_source() -> None:
    schemas = kserve_schemas()
    assert set(schemas) == {
        "serving.kserve.io/v1alpha1/ServingRuntime",
        "serving.kserve.io/v1beta1/InferenceService",
    }
    for vendored in schemas.values():
        assert re.fullmatch(r"[0-9a-f]{40}", vendored["commit"])
        assert vendored["source"].startswith("https://github.com/kserve/kserve/blob/")


def _set(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    node: Any = doc
    *parents, last = path.split(".")
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    node[int(last) if last.isdigit() else last] = value
    return doc


BROKEN = [
    # (kind, dotted path, wrong value, what the problem names)
    (
        "DaemonSet",
        "spec.template.spec.containers.0.ports.0.containerPort",
        "8003",
        "containerPort",
    ),
    ("DaemonSet", "spec.template.spec.tolerations", {"key": "nvidia.com/gpu"}, "tolerations"),
    ("ConfigMap", "data.devices", 8, "devices"),
    ("Namespace", "metadata.labels", ["privileged"], "labels"),
    ("ServingRuntime", "spec.protocolVersions", "v2", "protocolVersions"),
    ("ServingRuntime", "spec.containers.0.ports.0.containerPort", "8080", "containerPort"),
    ("ServingRuntime", "spec.multiModel", "false", "multiModel"),
    ("ServingRuntime", "metadata.annotations", {"a": 1}, "annotations"),
    ("InferenceService", "spec.predictor.minReplicas", "1", "minReplicas"),
    ("InferenceService", "spec.predictor.model.modelFormat", "onnx", "modelFormat"),
]


@pytest.mark.parametrize(("kind", "path", "value", "named"), BROKEN)
def test_a_wrong_field_type_is_rejected(kind: str, path: str, value: Any, named: str) -> None:
    found = problems(_set(sample(kind), path, value))
    assert found, f"{kind} with {path} = {value!r} passed"
    assert any(named in p for p in found), found


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("DaemonSet", "spec.template.spec.nodeSelectors"),  # misspelt: nodeSelector
        ("ServingRuntime", "spec.supportedModelFormat"),  # misspelt: supportedModelFormats
        ("ServingRuntime", "spec.containers.0.volumeMount"),  # misspelt: volumeMounts
        ("InferenceService", "spec.predictor.model.storageURI"),  # misspelt: storageUri
        ("InferenceService", "spec.transformer"),  # real, but not vendored: refused, not passed
    ],
)
def test_an_unknown_field_is_rejected(kind: str, path: str) -> None:
    found = problems(_set(sample(kind), path, {}))
    assert any("was unexpected" in p for p in found), found


def test_an_unknown_kind_or_kserve_version_is_an_error_not_a_pass() -> None:
    isvc = one("InferenceService", "ocr-chars")
    isvc["apiVersion"] = "serving.kserve.io/v1alpha1"
    assert "no vendored KServe schema" in problems(isvc)[0]
    assert "no Kubernetes" in problems({"apiVersion": "v1", "kind": "Gadget", "metadata": {}})[0]


# --- the lanes commands in the manifests, checked by lanes itself ---------------------------


def _arbiter_args() -> argparse.Namespace:
    config = one("ConfigMap", "lanes-arbiter")["data"]
    env = {}
    for e in arbiter_container()["env"]:
        ref = e.get("valueFrom", {}).get("configMapKeyRef")
        env[e["name"]] = config[ref["key"]] if ref else e["value"]
    return build_parser().parse_args(argv(arbiter_container(), env))


def test_the_arbiter_command_is_accepted_by_lanes_arbiter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lanes.cli.arbiter import spec
    from lanes.serving import devices

    args = _arbiter_args()
    assert args.command == "arbiter"
    monkeypatch.setattr(devices, "gpu_count", lambda: 8)  # an 8-GPU node
    checked = spec(args)
    assert checked["devices"] == [f"cuda:{i}" for i in range(8)]
    assert checked["gid"] == 2000
    assert checked["metrics"] == f"0.0.0.0:{arbiter_container()['ports'][0]['containerPort']}"


def _serve_config(
    container: dict[str, Any], env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> ServeConfig:
    from lanes.serving import devices

    words = argv(container, {})
    words[words.index("--models") + 1] = str(tmp_path)  # /mnt/models: the storage initializer's
    args = build_parser().parse_args(words)
    assert args.command == "serve"
    monkeypatch.setattr(devices, "cuda_count", lambda: 8)  # an 8-GPU node, ONNX Runtime with CUDA
    cli = {f.name: getattr(args, f.name, None) for f in dataclasses.fields(ServeConfig)}
    lanes_env = {k: v for k, v in env.items() if k.startswith("LANES_SERVE_")}
    return resolve(cli, None, lanes_env)


def test_the_serving_command_is_accepted_by_lanes_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    container = runtime_container()
    cfg = _serve_config(container, literal_env(container), tmp_path, monkeypatch)
    assert (cfg.host, cfg.port, cfg.models) == ("0.0.0.0", 8080, tmp_path)
    assert cfg.arbiter_fallback == "fail_open"


@pytest.mark.parametrize("name", ["ocr-chars", "ocr-lines"])
def test_an_inference_service_env_overrides_what_it_means_to(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KServe merges the InferenceService's env over the runtime's by name; a flag in the
    runtime's args would still win over it (lanes: command line > environment)."""
    container = runtime_container()
    override = literal_env(one("InferenceService", name)["spec"]["predictor"]["model"])
    keys = {f"LANES_SERVE_{f.name.upper()}": f.name for f in dataclasses.fields(ServeConfig)}
    for var in override:
        if var.startswith("LANES_SERVE_"):
            assert var in keys, f"{var}: no such lanes serve setting"
            assert "--" + keys[var].replace("_", "-") not in container["args"], var
    cfg = _serve_config(container, literal_env(container) | override, tmp_path, monkeypatch)
    for var, value in override.items():
        if var in keys:
            assert str(getattr(cfg, keys[var])) == value


def test_the_serving_pods_and_the_arbiter_agree() -> None:
    serve = runtime_container()
    words = argv(serve, {})
    arbiter = _arbiter_args()
    # One socket, on one hostPath directory, mounted at the same place by both.
    socket = Path(flag(words, "--arbiter").removeprefix("unix:"))
    assert socket == arbiter.socket
    runtime_spec = one("ServingRuntime")["spec"]
    daemon_spec = one("DaemonSet")["spec"]["template"]["spec"]
    for pod, container in ((runtime_spec, serve), (daemon_spec, arbiter_container())):
        (mount,) = container["volumeMounts"]
        (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
        assert mount["mountPath"] == volume["hostPath"]["path"] == str(socket.parent)
    # The socket is the group's: the serving process runs in it.
    assert serve["securityContext"]["runAsGroup"] == int(arbiter.group)
    # The same device names on both sides.
    assert literal_env(serve)["LANES_SERVE_DEVICES"] == arbiter.devices
    # Both land on GPU nodes.
    assert runtime_spec["nodeSelector"] == daemon_spec["nodeSelector"]
    assert runtime_spec["tolerations"] == daemon_spec["tolerations"]


def test_ports_probes_and_scrape_annotations_match_the_command() -> None:
    serve = runtime_container()
    words = argv(serve, {})
    port, metrics = int(flag(words, "--port")), flag(words, "--metrics-port")
    assert [p["containerPort"] for p in serve["ports"]] == [port]
    for probe in ("readinessProbe", "livenessProbe"):
        assert serve[probe]["httpGet"]["port"] == port
    assert serve["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    annotations = one("ServingRuntime")["spec"]["annotations"]
    assert annotations["prometheus.kserve.io/port"] == annotations["prometheus.io/port"] == metrics
    words = argv(arbiter_container(), {"LANES_DEVICES": "sim:1", "LANES_POLICY": "sjf"})
    pod = one("DaemonSet")["spec"]["template"]
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == flag(words, "--metrics-port")
    # The drain fits in the grace period the InferenceServices give their pods.
    for name in ("ocr-chars", "ocr-lines"):
        grace = one("InferenceService", name)["spec"]["predictor"]["terminationGracePeriodSeconds"]
        assert grace > int(flag(argv(serve, {}), "--drain-timeout"))
