#!/usr/bin/env python3
"""Fails when any secret recorded by the tests (secrets.ledger) appears in a log of the run or
in the database dump. Prints where, never the secret itself."""
import pathlib
import sys

logs = pathlib.Path(sys.argv[1])
ledger = logs / "secrets.ledger"
secrets = sorted({s for s in ledger.read_text().splitlines() if len(s) >= 12}) if ledger.exists() else []
if not secrets:
    print("scan-secrets: no secrets were recorded: the integration tests did not run")
    sys.exit(1)
found = 0
files = [p for p in logs.iterdir() if p.is_file() and p.name != "secrets.ledger"]
for path in files:
    text = path.read_text(errors="replace")
    for i, s in enumerate(secrets):
        if s in text:
            found += 1
            print(f"scan-secrets: secret #{i} (length {len(s)}) appears in {path.name}")
ledger.unlink()
print(f"scan-secrets: {len(secrets)} secrets checked against {len(files)} files: {'FOUND ' + str(found) if found else 'none found'}")
sys.exit(1 if found else 0)
