#!/usr/bin/env python3
"""The docs check (run by `make test`): the documentation says what the code does.

  1. Every relative link in the Markdown files resolves, and so does every #anchor.
  2. Every configuration variable the code reads is in docs/reference/configuration.md, every one
     documented there is read (by the code or by `make run`), and `tokenbroker serve --help`
     (ConfigVariables.swift) lists exactly those `serve` reads.
  4. The refresh flight's picture (docs/pictures/refresh-flight.dot) has exactly the actions,
     reports, start cases and finish cases of the code, and its SVG is rendered from it.
  3. Every command's `tokenbroker <command> --help` is, word for word, the block under that
     command in docs/reference/cli.md, and the table of operations in docs/reference/api.md is
     the one docs/openapi.yaml gives (`scripts/docs-check.py --write` rewrites both).

  scripts/docs-check.py [ROOT]      check ROOT (default: this checkout)
  scripts/docs-check.py --self-test shows each check failing on a copy broken its way
The README's walk-through is run as a script by scripts/newcomer-check.sh.
"""
import os, re, shutil, subprocess, sys, tempfile

# Documents other work adds; a link to them is allowed until they exist. Empty it on merge.
PENDING_DOCS: set[str] = set()  # links to documents not yet written (none)
# Read by the CLI's API commands, not by serve.
CLI_ONLY = {"TOKENBROKER_URL", "TOKENBROKER_API_KEY", "TOKENBROKER_CLIENT_SECRET"}
# Read by `make run` (scripts/run.sh), documented with the rest.
SCRIPT_VARS = {"DEV_IDP_LISTEN", "MAKE_RUN_DIR"}
SKIP_DIRS = {".build", ".run", ".git", "node_modules", ".venv", "venv"}
LISTENER_PREFIXES = ["", "PUBLIC_", "OPS_"]


def markdown_files(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith(".")]
        for f in files:
            if f.endswith(".md"):
                yield os.path.join(d, f)


def strip_code(text):
    return re.sub(r"```.*?```", "", text, flags=re.S)


def slug(heading):
    h = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h, flags=re.U)
    return h.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        text = strip_code(open(path, encoding="utf-8").read())
        seen, out = {}, set()
        for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*$", text, flags=re.M):
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
        out |= set(re.findall(r'<a (?:name|id)="([^"]+)"', text))
        cache[path] = out
    return cache[path]


def check_links(root):
    errors = []
    for f in markdown_files(root):
        rel = os.path.relpath(f, root)
        text = strip_code(open(f, encoding="utf-8").read())
        text = re.sub(r"`[^`\n]*`", "", text)
        for m in re.finditer(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text):
            target = m.group(1)
            if re.match(r"[a-zA-Z][a-zA-Z+.-]*:", target):
                continue
            path, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            if os.path.relpath(dest, root) in PENDING_DOCS:
                continue
            if not os.path.exists(dest):
                errors.append(f"{rel}: link to {target}: no such file")
            elif frag and dest.endswith(".md") and frag not in anchors(dest):
                errors.append(f"{rel}: link to {target}: no heading #{frag}")
    return errors


def variables_read(root):
    found = set()
    for d, dirs, files in os.walk(os.path.join(root, "Sources")):
        for f in files:
            if not f.endswith(".swift") or f == "ConfigVariables.swift":
                continue
            text = open(os.path.join(d, f), encoding="utf-8").read()
            for m in re.finditer(r'"((?:TOKENBROKER_|DATABASE_URL)[A-Z0-9_]*(?:\\\(prefix\)[A-Z0-9_]*)?)', text):
                name = m.group(1)
                if "\\(prefix)" in name:
                    found |= {name.replace("\\(prefix)", p) for p in LISTENER_PREFIXES}
                elif not name.startswith("TOKENBROKER_TEST_") and name != "TOKENBROKER_":
                    found.add(name)
    return {v for v in found if not v.endswith("_") and v != "TOKENBROKER_BIN_DIR"}


def variables_documented(root):
    text = open(os.path.join(root, "docs/reference/configuration.md"), encoding="utf-8").read()
    names = set()
    for line in text.splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            names |= set(re.findall(r"`((?:TOKENBROKER_|DATABASE_URL|DEV_IDP_|MAKE_RUN_)[A-Z0-9_]*)`", first))
    return names


def variables_listed(root):
    text = open(os.path.join(root, "Sources/BrokerApp/Config/ConfigVariables.swift"), encoding="utf-8").read()
    return set(re.findall(r'\("([A-Z][A-Z0-9_]+)",', text))


def check_variables(root):
    read, documented, listed = variables_read(root), variables_documented(root), variables_listed(root)
    errors = [f"{v}: read by the code, not in docs/reference/configuration.md" for v in sorted(read - documented)]
    errors += [f"{v}: in docs/reference/configuration.md, read by nothing" for v in sorted(documented - read - SCRIPT_VARS)]
    serve = read - CLI_ONLY
    errors += [f"{v}: read by serve, not listed by serve --help (ConfigVariables.swift)" for v in sorted(serve - listed)]
    errors += [f"{v}: listed by serve --help, read by nothing" for v in sorted(listed - serve)]
    return errors


def cli_help(binary):
    usage = subprocess.run([binary, "--help"], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}).stdout
    commands = sorted(set(re.findall(r"^  tokenbroker ([a-z-]+)", usage, flags=re.M)))
    out = {}
    for c in commands:
        r = subprocess.run([binary, c, "--help"], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
        out[c] = r.stdout.rstrip("\n")
    return out


CLI_BLOCK = re.compile(r"^### `tokenbroker ([a-z-]+)`\n\n```text\n(.*?)\n```", flags=re.M | re.S)


def check_cli(root, binary):
    text = open(os.path.join(root, "docs/reference/cli.md"), encoding="utf-8").read()
    documented = {m.group(1): m.group(2) for m in CLI_BLOCK.finditer(text)}
    actual = cli_help(binary)
    errors = [f"tokenbroker {c}: no block in docs/reference/cli.md (scripts/docs-check.py --write)" for c in sorted(set(actual) - set(documented))]
    errors += [f"docs/reference/cli.md: tokenbroker {c} is not a command" for c in sorted(set(documented) - set(actual))]
    errors += [f"docs/reference/cli.md: tokenbroker {c} --help differs (scripts/docs-check.py --write)"
               for c in sorted(set(actual) & set(documented)) if actual[c] != documented[c]]
    return errors


def write_cli(root, binary):
    path = os.path.join(root, "docs/reference/cli.md")
    text = open(path, encoding="utf-8").read()
    marker = "## Every command's usage"
    text = text.split(marker)[0].rstrip("\n")
    blocks = "".join(f"\n\n### `tokenbroker {c}`\n\n```text\n{h}\n```" for c, h in cli_help(binary).items())
    open(path, "w", encoding="utf-8").write(text + f"\n\n{marker}\n\nWhat `tokenbroker <command> --help` prints (the docs check compares).{blocks}\n")


API_MARKER = "## Every operation"


def api_table(root):
    import yaml
    spec = yaml.safe_load(open(os.path.join(root, "docs/openapi.yaml"), encoding="utf-8"))
    rows = ["| method and path | operation | listener and area | what |", "| --- | --- | --- | --- |"]
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            if isinstance(op, dict) and "operationId" in op:
                summary = " ".join(str(op.get("summary", "")).split()).replace("|", "\\|")
                rows.append(f"| `{method.upper()} {path}` | `{op['operationId']}` | {', '.join(op.get('tags', []))} | {summary} |")
    return (f"{API_MARKER}\n\nGenerated from [openapi.yaml](../openapi.yaml) by `scripts/docs-check.py --write`"
            " (the docs check compares); the file has each operation's parameters, bodies and answers.\n\n" + "\n".join(rows) + "\n")


def check_api(root):
    text = open(os.path.join(root, "docs/reference/api.md"), encoding="utf-8").read()
    if API_MARKER not in text or text[text.index(API_MARKER):] != api_table(root):
        return ["docs/reference/api.md: the table of operations differs from docs/openapi.yaml (scripts/docs-check.py --write)"]
    return []


def write_api(root):
    path = os.path.join(root, "docs/reference/api.md")
    text = open(path, encoding="utf-8").read().split(API_MARKER)[0].rstrip("\n")
    open(path, "w", encoding="utf-8").write(text + "\n\n" + api_table(root))


FLIGHT_DOT = "docs/pictures/refresh-flight.dot"


def enum_cases(text, enum):
    body = re.search(r"enum " + enum + r"\b[^{]*\{(.*?)\n    \}", text, flags=re.S)
    return set(re.findall(r"^\s*case (\w+)", body.group(1), flags=re.M)) if body else set()


def check_flight(root):
    """The refresh flight's picture has the machine's own actions and reports, and its SVG is current."""
    src = os.path.join(root, "Sources/BrokerCore/Refresh")
    flight = open(os.path.join(src, "RefreshFlight.swift"), encoding="utf-8").read()
    dot = open(os.path.join(root, FLIGHT_DOT), encoding="utf-8").read()
    nodes = set(re.findall(r"^\s*(\w+) \[label=", dot, flags=re.M))
    labels = re.findall(r"-> \w+ \[label=\"([^\"]*)\"", dot)
    reports = {l.split(":")[0] for l in labels}
    def cases(report):
        return {c.strip() for l in labels if l.startswith(report + ":") for c in l.split(":", 1)[1].split(",")}
    code = {
        "actions": enum_cases(flight, "Action"),
        "reports": set(re.findall(r"public mutating func (\w+)\(", flight)),
        "starts": enum_cases(open(os.path.join(src, "RefreshStart.swift"), encoding="utf-8").read(), "RefreshStart"),
        "finishes": enum_cases(open(os.path.join(src, "RefreshFinish.swift"), encoding="utf-8").read(), "Next"),
    }
    drawn = {"actions": nodes, "reports": reports, "starts": cases("started"), "finishes": cases("answered") | cases("resolved")}
    errors = []
    for k in code:
        if code[k] != drawn[k]:
            errors.append(f"{FLIGHT_DOT}: stale diagram: {k} in the code {sorted(code[k])}, drawn {sorted(drawn[k])}")
    if shutil.which("dot"):
        pictures = os.path.join(root, "docs/pictures")
        for f in sorted(os.listdir(pictures)):
            if f.endswith(".dot"):
                svg = os.path.join(pictures, f[:-4] + ".svg")
                rendered = subprocess.run(["dot", "-Tsvg", os.path.join(pictures, f)], capture_output=True, text=True).stdout
                if not os.path.exists(svg) or open(svg, encoding="utf-8").read() != rendered:
                    errors.append(f"docs/pictures/{f[:-4]}.svg: not rendered from its .dot (scripts/docs-check.py --write)")
    else:
        print("docs-check: dot (graphviz) not installed: the SVGs were not compared")
    return errors


def write_pictures(root):
    if shutil.which("dot"):
        for f in os.listdir(os.path.join(root, "docs/pictures")):
            if f.endswith(".dot"):
                src = os.path.join(root, "docs/pictures", f)
                open(src[:-4] + ".svg", "w", encoding="utf-8").write(subprocess.run(["dot", "-Tsvg", src], capture_output=True, text=True, check=True).stdout)


def check(root, binary):
    return check_links(root) + check_variables(root) + check_api(root) + check_flight(root) + (check_cli(root, binary) if binary else [])


def self_test(root, binary):
    """Each check, shown failing on a copy broken its way."""
    failures = 0
    def copy():
        d = tempfile.mkdtemp(prefix="docs-check-")
        for f in markdown_files(root):
            dst = os.path.join(d, os.path.relpath(f, root))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy(f, dst)
        shutil.copytree(os.path.join(root, "Sources"), os.path.join(d, "Sources"), ignore=shutil.ignore_patterns("*.c", "*.cpp", "*.h"))
        for keep in ["docs/openapi.yaml", "docs/pictures", "LICENSE", "deploy", "providers"]:
            src = os.path.join(root, keep)
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(d, keep)) if not os.path.exists(os.path.join(d, keep)) else None
        return d
    def breaks(name, mutate, expect):
        nonlocal failures
        d = copy()
        try:
            mutate(d)
            errors = check(d, binary)
            if any(expect in e for e in errors):
                print(f"docs-check self-test: {name}: fails as it should ({next(e for e in errors if expect in e)})")
            else:
                print(f"docs-check self-test: {name}: NOT caught; errors were {errors}")
                failures += 1
        finally:
            shutil.rmtree(d)
    def append(path, text):
        def m(d):
            with open(os.path.join(d, path), "a", encoding="utf-8") as f:
                f.write(text)
        return m
    breaks("a broken link", append("README.md", "\nSee [the missing guide](docs/missing.md).\n"), "docs/missing.md")
    breaks("a broken anchor", append("docs/README.md", "\nSee [no such part](concepts.md#no-such-part).\n"), "#no-such-part")
    breaks("an undocumented variable", append("Sources/BrokerApp/Config/BrokerConfig.swift", '\nlet _undocumented = "TOKENBROKER_UNDOCUMENTED_KNOB"\n'),
           "TOKENBROKER_UNDOCUMENTED_KNOB: read by the code")
    breaks("a documented variable nothing reads", append("docs/reference/configuration.md", "\n| `TOKENBROKER_NOBODY_READS` | 1 | nothing |\n"),
           "TOKENBROKER_NOBODY_READS: in docs")
    if binary:
        def stale_cli(d):
            p = os.path.join(d, "docs/reference/cli.md")
            t = open(p, encoding="utf-8").read().replace("run the HTTP API", "run the HTTP server", 1)
            open(p, "w", encoding="utf-8").write(t)
        breaks("a CLI page out of date", stale_cli, "tokenbroker serve --help differs")
    def stale_api(d):
        p = os.path.join(d, "docs/openapi.yaml")
        t = open(p, encoding="utf-8").read().replace("operationId: health", "operationId: liveness", 1)
        open(p, "w", encoding="utf-8").write(t)
    breaks("an API table out of date", stale_api, "table of operations differs")
    def new_action(d):
        p = os.path.join(d, "Sources/BrokerCore/Refresh/RefreshFlight.swift")
        t = open(p, encoding="utf-8").read().replace("        case writeHeldAnswer\n", "        case writeHeldAnswer\n        case askAnotherReplica\n", 1)
        open(p, "w", encoding="utf-8").write(t)
    breaks("a stale state-machine diagram", new_action, "stale diagram: actions")
    return failures


def main():
    args = sys.argv[1:]
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    bindir = os.environ.get("TOKENBROKER_BIN_DIR") or subprocess.run(["swift", "build", "--show-bin-path"], cwd=root, capture_output=True, text=True).stdout.strip()
    binary = os.path.join(bindir, "tokenbroker")
    binary = binary if os.path.exists(binary) else None
    if args in (["--write"], ["--write-cli"]):
        write_api(root)
        write_pictures(root)
        if binary:
            write_cli(root, binary)
        return 0
    if args == ["--self-test"]:
        return 1 if self_test(root, binary) else 0
    errors = check(os.path.abspath(args[0]) if args else root, binary)
    for e in errors:
        print("docs-check:", e)
    if not binary:
        print("docs-check: tokenbroker not built: the CLI pages were not compared")
    print(f"docs-check: {'ok' if not errors else str(len(errors)) + ' problems'}"
          + (f" (links to {', '.join(sorted(PENDING_DOCS))} allowed until they exist)" if PENDING_DOCS else ""))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
