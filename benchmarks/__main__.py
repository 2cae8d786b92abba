"""The benchmarks by name: list them, run one with its own options, or run them all.

    python -m benchmarks                         list the benchmarks
    python -m benchmarks NAME [OPTIONS...]       run one; OPTIONS go to it as they are
                                                 (python -m benchmarks NAME --help)
    python -m benchmarks all [--reference-venv DIR]
                                                 each benchmark in turn at its defaults;
                                                 with the reference where it takes one

Each runs in its own process (``python -m benchmarks.<module>``), as when started alone.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


@dataclasses.dataclass(frozen=True)
class Benchmark:
    module: str
    # How the benchmark is given the reference: a virtualenv, its python, or not at all.
    reference: str | None = None
    # A tool rather than a figure: listed, run by name, left out of ``all``.
    tool: bool = False
    # Needs the real cloud running (tools/openstack.sh up): run by name, left out of ``all``.
    cloud: bool = False


BENCHMARKS = {
    "api": Benchmark("api_bench", reference="--reference-venv"),
    "data": Benchmark("data_bench", reference="--reference-venv"),
    "detection": Benchmark("detection_bench"),
    "intake": Benchmark("intake_bench", reference="--reference-python"),
    "rack": Benchmark("rack_bench", reference="--reference-python"),
    "recovery": Benchmark("recovery_bench", reference="--reference-python"),
    "takeover": Benchmark("takeover_bench"),
    "fence": Benchmark("fence_bench"),
    "wakeup": Benchmark("wakeup_bench"),
    "metrics-cost": Benchmark("metrics_cost"),
    "real-recovery": Benchmark("real_recovery", cloud=True),
    "real-cloud-cost": Benchmark("real_cloud_cost", cloud=True),
    "profile": Benchmark("api_profile", tool=True),
}


def summary(bench: Benchmark) -> str:
    """The first line of the module's docstring, read without importing it."""
    with open(os.path.join(HERE, f"{bench.module}.py")) as fh:
        doc = ast.get_docstring(ast.parse(fh.read())) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def listing() -> str:
    lines = ["benchmarks (python -m benchmarks NAME [OPTIONS...], or all):"]
    for name, bench in BENCHMARKS.items():
        note = " [tool, not in all]" if bench.tool else ""
        note = " [needs tools/openstack.sh up, not in all]" if bench.cloud else note
        lines.append(f"  {name:<12} {summary(bench)}{note}")
    return "\n".join(lines)


def run(bench: Benchmark, options: list[str]) -> int:
    argv = [sys.executable, "-m", f"benchmarks.{bench.module}", *options]
    print("$ " + " ".join(argv), file=sys.stderr, flush=True)
    return subprocess.run(argv, cwd=os.path.dirname(HERE), check=False).returncode


def run_all(options: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks all")
    parser.add_argument("--reference-venv", help="virtualenv of the reference (masakari 22.0.0)")
    args = parser.parse_args(options)
    failed = []
    for name, bench in BENCHMARKS.items():
        if bench.tool or bench.cloud:
            continue
        given: list[str] = []
        if args.reference_venv and bench.reference == "--reference-venv":
            given = [bench.reference, args.reference_venv]
        elif args.reference_venv and bench.reference == "--reference-python":
            given = [bench.reference, os.path.join(args.reference_venv, "bin", "python")]
        if run(bench, given) != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("list", "-h", "--help"):
        print(listing())
        return 0
    name, options = args[0], args[1:]
    if name == "all":
        return run_all(options)
    if name not in BENCHMARKS:
        print(f"unknown benchmark {name!r}\n{listing()}", file=sys.stderr)
        return 2
    return run(BENCHMARKS[name], options)


if __name__ == "__main__":
    sys.exit(main())
