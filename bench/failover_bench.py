"""`bench.py failover`: three release brokers on the two-node Patroni cluster of
scripts/patroni.sh (multi-host DATABASE_URL, target_session_attrs=read-write) under a refresh
storm and worker traffic; the primary's postmaster is SIGKILLed. Measured in the same run:
Patroni's own promotion (the standby's pg_is_in_recovery() polled every 20 ms), the first
committed refresh on the new primary (each replica forces a refresh of a session of its own
every 50 ms: the first 200 answered after the promotion was written there; after a change of
database server refreshes are held for TOKENBROKER_FAILOVER_HOLD_SECONDS while replicas re-apply
their journals), when the last replica refreshed again, the first write no hold delays (each
replica writes the tenant's registration every 50 ms) and when the last replica wrote again,
the 503s workers saw, and afterwards refresh tokens presented twice at the IdP, sessions in
needs_reauth, and the rotations replicas re-applied (their tokenbroker_failover_rotations_reapplied_total).
Rounds in synchronous mode, then in asynchronous mode with WAL shipping frozen for the last
2 s before the kill (the lossy case). Figures go into bench/results.json."""
import json, os, pathlib, random, statistics, subprocess, threading, time

import __main__ as b

ROOT = pathlib.Path(__file__).resolve().parent.parent
PATRONI = str(ROOT / "scripts" / "patroni.sh")
SESSIONS = int(os.environ.get("BENCH_FAILOVER_SESSIONS", "300"))
ROUNDS = int(os.environ.get("BENCH_FAILOVER_ROUNDS", "3"))


def patroni(*args):
    return subprocess.run([PATRONI, *args], check=True, capture_output=True, text=True).stdout.strip()


def in_recovery(port):
    r = subprocess.run(["psql", f"postgresql://postgres@127.0.0.1:{port}/postgres?connect_timeout=1", "-Atqc", "SELECT pg_is_in_recovery()"],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def one_round(env, op, idp, mode, tag):
    patroni("mode", mode)
    logs = [open(pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"tokenbroker-failover-{tag}-{i}.log", "w+") for i in range(3)]
    ports = [b.free_port() for _ in range(3)]
    ps = [b.start([b.BIN / "tokenbroker", "serve"], {**env, "TOKENBROKER_LISTEN": f"127.0.0.1:{p}", "TOKENBROKER_LOG_LEVEL": "info"}, log=logs[i])
          for i, p in enumerate(ports)]
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    for u in urls:
        b.wait_ready(u + "/healthz")
    tenant, app = f"failover{tag}", f"failover-app{tag}"
    b.http("POST", idp + "/admin/clients", body={"client_id": app, "client_secret": "fo-secret", "redirect_uris": [urls[0] + "/v1/callback"],
                                                  "access_ttl": 10})
    b.http("PUT", f"{urls[0]}/v1/tenants/{tenant}", op, {"name": "Failover"})
    s, _, body = b.http("PUT", f"{urls[0]}/v1/tenants/{tenant}/clients/app", op, {
        "issuer": idp, "client_id": app, "auth_method": "client_secret_basic", "client_secret": "fo-secret",
        "redirect_uri": urls[0] + "/v1/callback", "scopes": ["openid", "offline_access"]})
    assert s == 201, body
    key = json.loads(b.http("POST", urls[0] + "/v1/apikeys", op, {"name": "w", "roles": ["worker", "admin"], "tenants": [tenant]})[2])["key"]
    subjects = [f"f-{i}" for i in range(SESSIONS + 15)]
    tokens = json.loads(b.http("POST", idp + "/admin/grants", body={"client_id": app, "subjects": subjects})[2])["refresh_tokens"]
    ids = []
    for i, sub in enumerate(subjects):
        # The forcers' own sessions (the first 15) are left alone by the engines: an hour to live.
        exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + (3600 if i < 15 else 2 + i % 9)))
        s, _, body = b.http("POST", f"{urls[0]}/v1/tenants/{tenant}/sessions:import", key,
                            {"client": "app", "subject": sub, "refresh_token": tokens[sub], "access_token": "imported", "expires_at": exp})
        assert s == 201, body
        ids.append(json.loads(body)["session_id"])
    own, ids = [ids[r:15:3] for r in range(3)], ids[15:]

    stop = threading.Event()
    statuses = {}
    lock = threading.Lock()

    def worker(n):
        while not stop.is_set():
            try:
                s, _, _ = b.http("POST", f"{urls[n % 3]}/v1/tenants/{tenant}/sessions/{random.choice(ids)}/token", key, {"min_ttl": 1})
            except Exception:   # a connection cut mid-answer during the outage
                s = -1
            with lock:
                statuses[s] = statuses.get(s, 0) + 1
            if s != 200:
                time.sleep(0.05)
    workers = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in workers:
        t.start()
    time.sleep(8)   # the storm runs: rotations in every replica's engine
    firsts = [None] * 3
    killed, promoted = [None], [None]

    busy = [0] * 3

    def forcer(r):
        mine = list(own[r])
        while not stop.is_set() and firsts[r] is None:
            try:
                s, _, body = b.http("POST", f"{urls[r]}/v1/tenants/{tenant}/sessions/{mine[0]}/token", key, {"min_ttl": 1, "force_refresh": True})
            except Exception:   # a connection cut mid-answer during the outage
                s, body = -1, b""
            busy_now = s == 503 and b'"refresh_busy"' in body and promoted[0] is not None
            if (s == 409 or busy_now) and len(mine) > 1:
                # Lost with the old primary, or left busy by a refresh in flight at the kill
                # (counted): the next one.
                busy[r] += busy_now
                mine.pop(0)
                continue
            # Answered after the promotion: committed on the new primary (until the old
            # primary's backends notice their postmaster died, a refresh can still commit there).
            if s == 200 and promoted[0] is not None and time.time() > promoted[0]:
                firsts[r] = time.time()
            time.sleep(0.05)
    wrote = [None] * 3

    def writer(r):   # a write that no failover hold delays: the tenant's registration
        while not stop.is_set() and wrote[r] is None:
            try:
                s, _, _ = b.http("PUT", f"{urls[r]}/v1/tenants/{tenant}", op, {"name": "Failover"})
            except Exception:   # a connection cut mid-answer during the outage
                s = -1
            if s == 200 and promoted[0] is not None and time.time() > promoted[0]:
                wrote[r] = time.time()
            time.sleep(0.05)
    forcers = [threading.Thread(target=forcer, args=(r,)) for r in range(3)] + [threading.Thread(target=writer, args=(r,)) for r in range(3)]
    standby = patroni("standby")
    if mode == "async":
        patroni("freeze-wal")
        time.sleep(2)   # commits acknowledged that never reach the standby
    for t in forcers:
        t.start()
    killed[0] = time.time()
    patroni("kill-primary")
    while promoted[0] is None and time.time() - killed[0] < 30:
        if in_recovery(standby) == "f":
            promoted[0] = time.time()
        else:
            time.sleep(0.02)
    promoted_at = promoted[0]
    for t in forcers:
        t.join(timeout=30)
    patroni("thaw-wal")
    time.sleep(4)   # the storm goes on on the new primary
    stop.set()
    for t in workers:
        t.join()
    # Every session presented once more: a stored refresh token the IdP had replaced is refused.
    refused = 0
    for sid in ids:
        s, _, _ = b.http("POST", f"{urls[0]}/v1/tenants/{tenant}/sessions/{sid}/token", key, {"min_ttl": 1, "force_refresh": True})
        refused += s != 200
    counters = json.loads(b.http("GET", f"{idp}/stats?client_id={app}")[2])
    needs_reauth = int(b.psql(f"SELECT count(*) FROM sessions WHERE tenant_id = '{tenant}' AND state = 'needs_reauth'"))
    reapplied = 0   # the replicas' own count of rotations written again on the new primary
    for u in urls:
        for line in b.http("GET", u + "/metrics")[2].decode().splitlines():
            if line.startswith("tokenbroker_failover_rotations_reapplied_total "):
                reapplied += int(float(line.split()[-1]))
    # The next round's engines must not refresh this round's sessions too.
    b.psql(f"DELETE FROM sessions WHERE tenant_id = '{tenant}'")
    for p in ps:
        p.terminate()
        p.wait()
    for f in logs:
        f.close()
    patroni("wait", "60")
    r = {"mode": mode, "promotion_s": round(promoted_at - killed[0], 2) if promoted_at else None,
         "first_refresh_s": round(min(x for x in firsts if x) - killed[0], 2) if any(firsts) else None,
         "all_replicas_refreshing_s": round(max(firsts) - killed[0], 2) if all(firsts) else None,
         "first_write_s": round(min(x for x in wrote if x) - killed[0], 2) if any(wrote) else None,
         "all_replicas_writing_s": round(max(wrote) - killed[0], 2) if all(wrote) else None,
         "own_sessions_left_busy": sum(busy), "unavailable_503": statuses.get(503, 0), "handed_out": statuses.get(200, 0),
         "other_statuses": {str(k): v for k, v in statuses.items() if k not in (200, 503)},
         "reuse_detected": counters.get("reuse_detected", -1), "needs_reauth": needs_reauth, "refused_after": refused, "reapplied": reapplied}
    print(f"failover round {tag}: {r}", flush=True)
    return r


def failover_bench(env, op, idp):
    rounds = {"sync": [], "async": []}
    for i in range(ROUNDS):
        rounds["sync"].append(one_round(env, op, idp, "sync", f"s{i}"))
    for i in range(ROUNDS):
        rounds["async"].append(one_round(env, op, idp, "async", f"a{i}"))
    patroni("mode", "sync")
    out = {"failover_date": time.strftime("%Y-%m-%d"), "failover_sessions": SESSIONS, "failover_rounds": rounds}
    for mode, runs in rounds.items():
        def med(k):
            xs = [r[k] for r in runs if r[k] is not None]
            return round(statistics.median(xs), 2) if xs else None
        out[f"failover_{mode}_promotion_s"] = med("promotion_s")
        out[f"failover_{mode}_first_refresh_s"] = med("first_refresh_s")
        out[f"failover_{mode}_all_replicas_refreshing_s"] = med("all_replicas_refreshing_s")
        out[f"failover_{mode}_first_write_s"] = med("first_write_s")
        out[f"failover_{mode}_all_replicas_writing_s"] = med("all_replicas_writing_s")
        gaps = [r["first_refresh_s"] - r["promotion_s"] for r in runs if r["first_refresh_s"] and r["promotion_s"]]
        out[f"failover_{mode}_first_refresh_after_promotion_s"] = round(statistics.median(gaps), 2) if gaps else None
        out[f"failover_{mode}_reuse_detected"] = max(r["reuse_detected"] for r in runs)
        out[f"failover_{mode}_needs_reauth"] = max(r["needs_reauth"] for r in runs)
        out[f"failover_{mode}_reapplied"] = [r["reapplied"] for r in runs]
        out[f"failover_{mode}_sessions_left_busy"] = [r["own_sessions_left_busy"] for r in runs]
    return out


def on_patroni():
    """The benchmark on the Patroni cluster scripts/bench.sh started (its own database)."""
    os.environ["DATABASE_URL"] = os.environ["TOKENBROKER_BENCH_PATRONI_URL"]
    return failover_bench(*b.standalone())


def failover_only():
    """`bench.py failover` (scripts/bench.sh failover): the failover benchmark alone; merged
    into bench/results.json."""
    r = on_patroni()
    print(json.dumps(r, indent=2))
    previous = json.loads(b.OUT.read_text()) if b.OUT.exists() else {}
    previous.update(r)
    b.OUT.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")
