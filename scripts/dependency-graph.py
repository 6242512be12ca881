#!/usr/bin/env python3
"""The targets of Package.swift and what each may import, as docs/contributing.md shows them: a mermaid graph (an
edge implied by a longer path left out) and a table with every dependency.

  scripts/dependency-graph.py [--package-json FILE] [--write docs/contributing.md] [--check docs/contributing.md]

Reads `swift package dump-package` (run here unless --package-json names its output). With --write it replaces the
section between the markers `<!-- targets:begin -->` and `<!-- targets:end -->`; with --check it exits 1 when that
section differs from what Package.swift gives (make lint runs it). Otherwise it prints the section.
"""
import argparse
import json
import os
import subprocess
import sys

BEGIN, END = "<!-- targets:begin -->", "<!-- targets:end -->"


def targets(package):
    result = []
    for target in package["targets"]:
        dependencies = []
        for dependency in target.get("dependencies", []):
            for key in ("byName", "target", "product"):
                if key in dependency:
                    dependencies.append(dependency[key][0])
                    break
        kind = {"regular": "library", "system": "system library"}.get(target["type"], target["type"])
        result.append((target["name"], kind, target.get("path") or "", dependencies))
    return result


def section(package):
    listed = targets(package)
    needs = {name: set(dependencies) for name, _, _, dependencies in listed}

    def reachable(start, skip_edge):
        seen, stack = set(), [d for d in needs.get(start, ()) if d != skip_edge]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            stack.extend(needs.get(node, ()))
        return seen

    def node(name):
        return name.replace("-", "_")

    lines = ["```mermaid", "graph TD"]
    for name, kind, _, _ in listed:
        if "-" in name:
            lines.append(f'    {node(name)}["{name}"]')
    for name, kind, _, dependencies in listed:
        if kind == "test":
            continue
        for dependency in dependencies:
            if dependency not in reachable(name, dependency):  # not implied by a longer path
                lines.append(f"    {node(name)} --> {node(dependency)}")
    lines.append("```")
    lines += ["", "| target | kind | folder | may import (its dependencies in `Package.swift`) |", "| --- | --- | --- | --- |"]
    for name, kind, path, dependencies in listed:
        imports = ", ".join(f"`{d}`" for d in dependencies) or "nothing"
        lines.append(f"| `{name}` | {kind} | `{path}` | {imports} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--package-json", help="the output of swift package dump-package (default: run it)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="MARKDOWN", help="replace the section between the markers in this file")
    group.add_argument("--check", metavar="MARKDOWN", help="exit 1 if the section in this file is not up to date")
    args = parser.parse_args()
    if args.package_json:
        package = json.load(open(args.package_json))
    else:
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        package = json.loads(subprocess.check_output(["swift", "package", "dump-package"], cwd=root))
    generated = section(package)
    path = args.write or args.check
    if not path:
        sys.stdout.write(generated)
        return 0
    text = open(path).read()
    if BEGIN not in text or END not in text:
        print(f"dependency-graph: no {BEGIN} ... {END} section in {path}", file=sys.stderr)
        return 2
    head, rest = text.split(BEGIN, 1)
    current, tail = rest.split(END, 1)
    if args.check:
        if current.strip("\n") != generated.strip("\n"):
            print(f"dependency-graph: {path} does not show Package.swift's targets; run scripts/dependency-graph.py "
                  f"--write {path}", file=sys.stderr)
            return 1
        return 0
    open(path, "w").write(head + BEGIN + "\n" + generated + END + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
