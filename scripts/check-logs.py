#!/usr/bin/env python3
"""Part of `make test`: every log line the run wrote (brokers, development IdPs, the CLI) is a
JSON object with OpenTelemetry-style fields — `timestamp`, `severity_text`, `body` — whose
numeric fields are numbers and whose lines stay bounded; and refresh failures were logged with
their error code (the fault tests cause them). Prints what is wrong, never a whole line."""
import json
import pathlib
import sys

NUMERIC = {"status", "ms", "count", "attempts", "sessions", "port", "pid", "deleted", "remaining", "resealed"}
SEVERITIES = {"DEBUG", "INFO", "WARN", "ERROR"}
logs = pathlib.Path(sys.argv[1])
problems, lines, codes = [], 0, set()
for path in sorted(logs.glob("*.log")):
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        lines += 1
        where = f"{path.name}:{n}"
        try:
            doc = json.loads(line)
        except ValueError:
            problems.append(f"{where}: not JSON: {line[:80]!r}")
            continue
        if not isinstance(doc, dict):
            problems.append(f"{where}: not a JSON object")
            continue
        if not all(isinstance(doc.get(k), str) for k in ("timestamp", "severity_text", "body")):
            problems.append(f"{where}: no timestamp, severity_text or body")
        elif doc["severity_text"] not in SEVERITIES:
            problems.append(f"{where}: severity_text {doc['severity_text']!r}")
        for k in NUMERIC & doc.keys():
            if not isinstance(doc[k], (int, float)) or isinstance(doc[k], bool):
                problems.append(f"{where}: {k} is not a number")
        if len(line) > 4096:
            problems.append(f"{where}: a line of {len(line)} characters")
        if doc.get("code") and doc.get("severity_text") in ("WARN", "ERROR"):
            codes.add(doc["code"])
for code in ("refresh_refused", "idp_unavailable"):
    if code not in codes:
        problems.append(f"no refresh failure was logged with code {code} (the fault tests cause one)")
if lines == 0:
    problems.append("no log lines: the tests did not run")
for p in problems[:50]:
    print("check-logs:", p)
print(f"check-logs: {lines} lines checked, {len(problems)} problems; failure codes seen: {', '.join(sorted(codes))}")
sys.exit(1 if problems else 0)
