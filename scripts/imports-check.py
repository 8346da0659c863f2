#!/usr/bin/env python3
"""Package.swift declares exactly what each target imports.

For every Swift target of the package, the modules its sources import that are targets of this
package (system-library targets included) must be exactly its declared target dependencies: an
import not declared builds only by luck of the build order, and a declared dependency nothing
imports links for nothing and hides the architecture (style.md: the layout shows it).

Usage: imports-check.py [PACKAGE_ROOT]   (default: the repository). Reads the manifest through
`swift package dump-package`. Prints every mismatch, naming the target, the module and, for an
undeclared import, the file; exits 1 if there is any.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

IMPORT = re.compile(
    r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?"
    r"import\s+(?:(?:typealias|struct|class|enum|protocol|let|var|func)\s+)?([A-Za-z_][A-Za-z0-9_]*)",
    re.M)


def manifest(root):
    # A scratch folder of its own: the package's .build may be locked by a build or test run
    # (this check runs inside `swift test` too).
    with tempfile.TemporaryDirectory() as scratch:
        out = subprocess.run(["swift", "package", "--package-path", root, "--scratch-path", scratch, "dump-package"],
                             check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def declared(target):
    names = set()
    for d in target.get("dependencies", []):
        for kind in ("byName", "target"):
            if kind in d:
                names.add(d[kind][0])
    return names


def source_dir(root, target):
    if target.get("path"):
        return os.path.join(root, target["path"])
    return os.path.join(root, "Tests" if target["type"] == "test" else "Sources", target["name"])


def imports(directory, modules):
    """module -> first file (relative to the directory) importing it, for modules of the package."""
    found = {}
    for base, _, files in sorted(os.walk(directory)):
        for f in sorted(files):
            if not f.endswith(".swift"):
                continue
            path = os.path.join(base, f)
            with open(path, encoding="utf-8") as fh:
                for m in IMPORT.finditer(fh.read()):
                    if m.group(1) in modules:
                        found.setdefault(m.group(1), os.path.relpath(path, directory))
    return found


def check(root):
    pkg = manifest(root)
    modules = {t["name"] for t in pkg["targets"]}
    problems = []
    for t in pkg["targets"]:
        if t["type"] == "system":
            continue
        d = source_dir(root, t)
        has_swift = any(f.endswith(".swift") for _, _, fs in os.walk(d) for f in fs)
        if not has_swift:
            continue   # C targets: their dependencies are #includes, not imports.
        used = imports(d, modules)
        decl = declared(t)
        for m in sorted(set(used) - decl):
            problems.append(f"{t['name']}: imports {m} ({used[m]}) without declaring it in Package.swift")
        for m in sorted(decl - set(used)):
            problems.append(f"{t['name']}: declares {m} in Package.swift but never imports it")
    return problems


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    problems = check(root)
    for p in problems:
        print("imports-check: " + p, file=sys.stderr)
    if problems:
        return 1
    print("imports-check: every target imports exactly what Package.swift declares", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
