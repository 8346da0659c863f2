"""`bench.py mtls`: what mutual TLS and DPoP nonces cost a refresh, each against its reference in
the same run.

1. CPU per refresh for a mutual-TLS client (`self_signed_tls_client_auth`: its certificate on the
   connection, RFC 8705) against a `client_secret_basic` client, both refreshing against the same
   development IdP over HTTPS in its mutual-TLS mode, through one broker replica. Each client's
   sessions are made due together and drained while the broker's CPU is counted; the rounds
   alternate the two clients, and the first round of each only warms its connections (its kept
   connection and TLS session are what later refreshes reuse). The IdP's new connections per
   refresh show that they were reused.
2. IdP calls per refresh for a DPoP client with the IdP demanding nonces (RFC 9449 §8) against
   the same client with nonces off: sessions of a DPoP client are force-refreshed one after the
   other, and every request reaching the token endpoint is counted (grants and refusals). With
   nonces on, the IdP issues a new nonce every BENCH_MTLS_NONCE_EVERY refreshes.
Figures go into bench/results.json (keys mtls_* and dpop_nonce_*)."""
import json, os, pathlib, statistics, subprocess, tempfile, time
from concurrent.futures import ThreadPoolExecutor

import __main__ as b

SESSIONS = int(os.environ.get("BENCH_MTLS_SESSIONS", "3000"))
ROUNDS = int(os.environ.get("BENCH_MTLS_ROUNDS", "3"))
NONCE_REFRESHES = int(os.environ.get("BENCH_MTLS_NONCE_REFRESHES", "400"))
NONCE_EVERY = int(os.environ.get("BENCH_MTLS_NONCE_EVERY", "100"))


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def pki(work):
    """A server CA and the IdP's certificate from it; a client CA and one client certificate."""
    for name in ("server-ca", "client-ca"):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-keyout", str(work / f"{name}.key"), "-out", str(work / f"{name}.pem"), "-subj", f"/CN=bench {name}",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")

    def issue(cn, ca, ext):
        (work / f"{cn}.ext").write_text(ext)
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(work / f"{cn}.key"),
                "-out", str(work / f"{cn}.csr"), "-subj", f"/CN={cn}")
        openssl("x509", "-req", "-in", str(work / f"{cn}.csr"), "-CA", str(work / f"{ca}.pem"), "-CAkey", str(work / f"{ca}.key"),
                "-CAcreateserial", "-days", "2", "-extfile", str(work / f"{cn}.ext"), "-out", str(work / f"{cn}.pem"))
    issue("idp", "server-ca", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    issue("bench-mtls", "client-ca", "extendedKeyUsage=clientAuth\n")
    der = subprocess.run(["openssl", "x509", "-in", str(work / "bench-mtls.pem"), "-outform", "DER"], check=True, capture_output=True).stdout
    import hashlib
    return hashlib.sha256(der).hexdigest()


def refresh_cpu(env, op, work):
    """Part 1: broker CPU ms per refresh, mutual TLS against client_secret_basic."""
    sha = pki(work)
    port = b.free_port()
    idp_proc = b.start([b.BIN / "dev-idp", "--listen", f"127.0.0.1:{port}", "--tls-cert", str(work / "idp.pem"), "--tls-key",
                        str(work / "idp.key"), "--tls-client-ca", str(work / "client-ca.pem")])
    idp = f"https://127.0.0.1:{port}"
    b.trust(work / "server-ca.pem")
    b.wait_ready(idp + "/jwks")
    env = {**env, "TOKENBROKER_PROVIDER_CA_FILE": str(work / "server-ca.pem")}
    extra = {"TOKENBROKER_LOG_LEVEL": "warn", "TOKENBROKER_REFRESH_LOAD_SECONDS": "5"}
    ps, urls = b.start_brokers(env, 1, extra)
    broker = urls[0]
    tenant = "mtlsbench"
    b.http("PUT", f"{broker}/v1/tenants/{tenant}", op, {"name": "mTLS bench"})
    common = {"issuer": idp, "redirect_uri": broker + "/v1/callback", "scopes": ["openid", "offline_access"], "max_concurrent_refreshes": 16}
    st, _, body = b.http("POST", idp + "/admin/clients", body={"client_id": "bench-basic", "client_secret": "bench-secret",
                                                             "redirect_uris": [broker + "/v1/callback"], "access_ttl": 3600})
    assert st == 201, body
    st, _, body = b.http("POST", idp + "/admin/clients", body={"client_id": "bench-mtls", "tls_client_certificate_sha256": sha,
                                                             "redirect_uris": [broker + "/v1/callback"], "access_ttl": 3600})
    assert st == 201, body
    st, _, body = b.http("PUT", f"{broker}/v1/tenants/{tenant}/clients/basic", op,
                         {**common, "client_id": "bench-basic", "auth_method": "client_secret_basic", "client_secret": "bench-secret"})
    assert st == 201, body
    st, _, body = b.http("PUT", f"{broker}/v1/tenants/{tenant}/clients/mtls", op,
                         {**common, "client_id": "bench-mtls", "auth_method": "self_signed_tls_client_auth",
                          "tls_client_certificate": (work / "bench-mtls.pem").read_text(), "tls_client_key": (work / "bench-mtls.key").read_text()})
    assert st == 201, body
    key = json.loads(b.http("POST", broker + "/v1/apikeys", op, {"name": "m", "roles": ["admin"], "tenants": [tenant]})[2])["key"]
    for client, idp_client in (("basic", "bench-basic"), ("mtls", "bench-mtls")):
        subjects = [f"{client}-{i}" for i in range(SESSIONS)]
        tokens = json.loads(b.http("POST", idp + "/admin/grants", body={"client_id": idp_client, "subjects": subjects})[2])["refresh_tokens"]
        b.import_storm_sessions(broker, tenant, key, [(client, s, tokens[s]) for s in subjects])

    poller = b.StatsPoller(idp)
    runs = {"basic": [], "mtls": []}
    for rnd in range(ROUNDS + 1):
        for client in ("basic", "mtls"):
            # Due 6 s ahead: the replica's next load of due sessions (every 5 s) schedules them all.
            b.psql(f"UPDATE sessions SET next_refresh_at = now() + interval '6 seconds' WHERE tenant_id = '{tenant}' AND client_id = '{client}'")
            t0 = time.time() + 6
            time.sleep(max(0, t0 - time.time() - 1))
            before = poller.get()
            r = b.drain_storm(ps[0].pid, broker, idp_proc.pid, poller, before, poller.own, t0, SESSIONS)
            print(f"mtls bench round {rnd} {client}: {r['broker_cpu_ms_per_refresh']} ms CPU/refresh, {r['refreshes_per_s']} refreshes/s, "
                  f"{r['new_connections_per_refresh_idp']} new IdP connections/refresh, drained {r['drained_all']}", flush=True)
            if rnd > 0:   # round 0 only opens the connections
                runs[client].append(r)
    poller.close()
    counters = json.loads(b.http("GET", idp + "/stats?client_id=bench-mtls")[2])
    for p in ps:
        p.terminate()
        p.wait()
    idp_proc.terminate()
    idp_proc.wait()
    med = statistics.median
    basic = med(r["broker_cpu_ms_per_refresh"] for r in runs["basic"])
    mtls = med(r["broker_cpu_ms_per_refresh"] for r in runs["mtls"])
    ratios = [m["broker_cpu_ms_per_refresh"] / s["broker_cpu_ms_per_refresh"] for m, s in zip(runs["mtls"], runs["basic"])]
    return {
        "mtls_sessions": SESSIONS, "mtls_rounds": ROUNDS,
        "mtls_cpu_ms_per_refresh": round(mtls, 3), "mtls_basic_cpu_ms_per_refresh": round(basic, 3),
        "mtls_cpu_vs_client_secret_basic": round(med(ratios), 3), "mtls_cpu_vs_client_secret_basic_rounds": [round(x, 3) for x in ratios],
        "mtls_new_connections_per_refresh_idp": max(r["new_connections_per_refresh_idp"] for r in runs["mtls"]),
        "mtls_basic_new_connections_per_refresh_idp": max(r["new_connections_per_refresh_idp"] for r in runs["basic"]),
        "mtls_refreshes_per_s": round(med(r["refreshes_per_s"] for r in runs["mtls"]), 1),
        "mtls_basic_refreshes_per_s": round(med(r["refreshes_per_s"] for r in runs["basic"]), 1),
        "mtls_all_drained": all(r["drained_all"] and r["reuse_detected"] == 0 for rs in runs.values() for r in rs),
        "mtls_authentications_at_idp": counters.get("mtls_authentications"),
    }


def nonce_calls(env, op):
    """Part 2: IdP token-endpoint requests per refresh of a DPoP client, nonces on against off."""
    idp_port = b.free_port()
    idp_proc = b.start([b.BIN / "dev-idp", "--listen", f"127.0.0.1:{idp_port}"])
    idp = f"http://127.0.0.1:{idp_port}"
    b.wait_ready(idp + "/jwks")
    ps, urls = b.start_brokers(env, 1, {"TOKENBROKER_LOG_LEVEL": "warn"})
    broker = urls[0]
    tenant = "noncebench"
    b.http("PUT", f"{broker}/v1/tenants/{tenant}", op, {"name": "Nonce bench"})
    out = {}
    for mode in ("off", "on"):
        client = f"dpop-{mode}"
        b.http("POST", idp + "/admin/clients", body={"client_id": client, "client_secret": "bench-secret",
                                                     "redirect_uris": [broker + "/v1/callback"], "dpop_required": True, "access_ttl": 3600})
        st, _, body = b.http("PUT", f"{broker}/v1/tenants/{tenant}/clients/{client}", op, {
            "issuer": idp, "client_id": client, "auth_method": "client_secret_basic", "client_secret": "bench-secret",
            "redirect_uri": broker + "/v1/callback", "scopes": ["openid", "offline_access"], "dpop": True})
        assert st == 201, body
        b.http("POST", idp + "/admin/settings", body={"dpop_nonce": mode == "on"})
        key = json.loads(b.http("POST", broker + "/v1/apikeys", op, {"name": client, "roles": ["worker", "enrol"], "tenants": [tenant]})[2])["key"]
        sessions = []
        for i in range(20):
            _, _, started = b.http("POST", f"{broker}/v1/tenants/{tenant}/logins", key, {"client": client, "login_hint": f"n{i}"})
            _, headers, _ = b.http("GET", json.loads(started)["authorization_url"])
            sessions.append(json.loads(b.http("GET", headers["Location"])[2])["session_id"])

        def counts():
            s = json.loads(b.http("GET", f"{idp}/stats?client_id={client}")[2])
            return s["token_calls"].get("refresh_token", 0) + s.get("dpop_refusals", 0), s["refreshes_ok"]
        calls0, ok0 = counts()
        for i in range(NONCE_REFRESHES):
            if mode == "on" and i > 0 and i % NONCE_EVERY == 0:
                b.http("POST", idp + "/admin/settings", body={"dpop_nonce": True})   # a new nonce
            st, _, body = b.http("POST", f"{broker}/v1/tenants/{tenant}/sessions/{sessions[i % len(sessions)]}/token", key,
                                 {"min_ttl": 60, "force_refresh": True})
            assert st == 200, body
        calls, ok = counts()
        out[mode] = ((calls - calls0) / max(ok - ok0, 1), ok - ok0)
        print(f"dpop nonces {mode}: {out[mode][0]:.3f} IdP calls per refresh over {out[mode][1]} refreshes", flush=True)
    b.http("POST", idp + "/admin/settings", body={"dpop_nonce": False})
    for p in ps:
        p.terminate()
        p.wait()
    idp_proc.terminate()
    idp_proc.wait()
    return {"dpop_nonce_idp_calls_per_refresh_on": round(out["on"][0], 4), "dpop_nonce_idp_calls_per_refresh_off": round(out["off"][0], 4),
            "dpop_nonce_calls_on_vs_off": round(out["on"][0] / out["off"][0], 4), "dpop_nonce_refreshes": out["on"][1],
            "dpop_nonce_changes_every": NONCE_EVERY}


def mtls_bench(env, op):
    """Both parts, with their own development IdPs and brokers."""
    work = pathlib.Path(tempfile.mkdtemp(prefix="tokenbroker-mtls-"))
    r = refresh_cpu(env, op, work)
    r.update(nonce_calls(env, op))
    r["mtls_date"] = time.strftime("%Y-%m-%d")
    return r


def mtls_only():
    """Runs the benchmark alone; its figures are merged into bench/results.json."""
    env, op, _ = b.standalone()
    r = mtls_bench(env, op)
    print(json.dumps(r, indent=2))
    previous = json.loads(b.OUT.read_text()) if b.OUT.exists() else {}
    previous.update(r)
    b.OUT.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")
