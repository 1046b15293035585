"""Install the profilers of ``lanes diagnose`` from Debian's archive when missing (make setup).

perf (package ``linux-perf``) and strace (``strace``) are what the diagnosis runs beside
py-spy, which comes from PyPI as a dependency of lanes. Best effort: a tool that is present is
left alone; a missing one is installed with ``apt-get install --no-install-recommends`` (and,
when that fails, again after ``apt-get update``). Where that cannot happen — no apt-get, not
root, the install failed — it prints one line saying what was not installed and why, and
still exits 0: the diagnosis skips a missing tool with the same kind of line.

``--stamp PATH`` touches PATH once every tool is present, so that make runs this again only
while something is missing or after this file changed.

Standard library only; runs with any Python >= 3.10.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

# tool -> the Debian package that provides it
PACKAGES = {"perf": "linux-perf", "strace": "strace"}
APT_TIMEOUT_S = 900


def works(tool: str) -> bool:
    """``tool --version`` runs (Debian's /usr/bin/perf may be a wrapper with no perf behind it)."""
    path = shutil.which(tool)
    if path is None:
        return False
    try:
        done = subprocess.run([path, "--version"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def apt_get(*args: str) -> tuple[bool, str]:
    """Run apt-get non-interactively: (succeeded, its last line of error output)."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        done = subprocess.run(
            ["apt-get", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=APT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"apt-get {args[0]} took over {APT_TIMEOUT_S} s"
    lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    return done.returncode == 0, (lines[-1] if lines else f"exit status {done.returncode}")


def install(missing: Sequence[str]) -> dict[str, str]:
    """Install the packages of ``missing``; {tool: why not} for those still missing."""
    if shutil.which("apt-get") is None:
        return {t: "apt-get not found (not a Debian system?)" for t in missing}
    packages = [PACKAGES[t] for t in missing]
    if os.geteuid() != 0:
        hint = f"apt-get install --no-install-recommends {' '.join(packages)}"
        return {t: f"installing needs root (run `{hint}` as root)" for t in missing}
    ok, last = apt_get("install", "-y", "--no-install-recommends", *packages)
    if not ok:  # the package lists may be absent or stale
        updated, why = apt_get("update")
        ok, last = apt_get("install", "-y", "--no-install-recommends", *packages)
        if not updated and not ok:
            last = f"apt-get update failed: {why}"
    if ok:
        last = "installed, but `--version` does not run"
    else:
        last = f"apt-get install {' '.join(packages)} failed: {last}"
    return {t: last for t in missing if not works(t)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stamp", type=Path, help="touch this file once every tool is present")
    args = parser.parse_args(argv)
    missing = [tool for tool in PACKAGES if not works(tool)]
    failed = install(missing) if missing else {}
    installed = [tool for tool in missing if tool not in failed]
    if installed:
        print(f"setup: installed {', '.join(installed)} from Debian's archive", flush=True)
    by_reason: dict[str, list[str]] = {}
    for tool, why in failed.items():
        by_reason.setdefault(why, []).append(tool)
    for why, tools in by_reason.items():
        them = "it" if len(tools) == 1 else "them"
        print(f"setup: {', '.join(tools)} not installed — {why}; lanes diagnose skips {them}")
    if not failed and args.stamp is not None:
        args.stamp.parent.mkdir(parents=True, exist_ok=True)
        args.stamp.touch()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
