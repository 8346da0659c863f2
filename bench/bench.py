#!/usr/bin/env python3
"""tokenbroker benchmarks (make bench). Starts the development IdP and a release broker,
measures the cached token path with wrk, measures nginx serving the same response bytes as a
static file with the same wrk settings in the same run, times batches of 1,000, and writes
bench/results.json. Figures are ratios against the reference measured alongside, since this
machine (2 cores shared by load generator and server) moves absolute numbers around."""
import base64, hashlib, json, os, pathlib, re, secrets, shutil, signal, socket, statistics, subprocess, sys, tempfile, threading, time
import http.client as http_client, urllib.error, urllib.parse, urllib.request
from concurrent.futures import ThreadPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = ROOT / ".build" / "release"
OUT = ROOT / "bench" / "results.json"
DURATION = os.environ.get("BENCH_DURATION", "6s")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "64"))
procs = []


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


opener = urllib.request.build_opener(NoRedirect)


def http(method, url, key=None, body=None, form=None, basic=None):
    data, headers = None, {}
    if body is not None:
        data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
    if form is not None:
        data, headers["Content-Type"] = urllib.parse.urlencode(form).encode(), "application/x-www-form-urlencoded"
    if key:
        headers["Authorization"] = "Bearer " + key
    if basic:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with opener.open(req) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def start(args, env=None, log=None):
    p = subprocess.Popen(args, env={**os.environ, **(env or {})}, stdout=log or subprocess.DEVNULL, stderr=log or subprocess.DEVNULL)
    procs.append(p)
    return p


def wait_ready(url):
    for _ in range(200):
        try:
            if http("GET", url)[0] < 500:
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit(f"{url} did not come up")


def cpu_ticks(pids):
    """User + system CPU of these processes so far, in clock ticks (/proc/<pid>/stat)."""
    total = 0
    for pid in pids:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total


def http_threads(pid):
    """The HTTP threads a broker runs: libmicrohttpd's workers, named MHD-worker (one listener)."""
    return sum(1 for c in pathlib.Path(f"/proc/{pid}/task").glob("*/comm") if c.read_text().strip() == "MHD-worker")


def children(pid):
    """The processes whose parent is `pid` (nginx's workers)."""
    out = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
        except (OSError, ValueError):
            pass
    return out


def wrk(url, script=None, pids=None):
    """Requests per second and p99 ms; with `pids`, also the server's CPU µs per request
    (its processes' user + system time over the run, divided by the requests answered)."""
    args = ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{DURATION}", "--latency"] + (["-s", script] if script else []) + [url]
    before = cpu_ticks(pids) if pids else 0
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    used = cpu_ticks(pids) - before if pids else 0
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    m = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", out)
    p99 = float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise SystemExit(f"wrk saw {non2xx.group(1)} error responses from {url}")
    if not pids:
        return rps, p99
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    return rps, p99, used / os.sysconf("SC_CLK_TCK") * 1e6 / max(requests, 1)


def wrk_one(url, script, seconds=5):
    """One connection, one request at a time (a native client with the body prepared once):
    the median and 90th percentile latency in ms."""
    out = subprocess.run(["wrk", "-t1", "-c1", f"-d{seconds}s", "--latency", "-s", script, url], capture_output=True, text=True, check=True).stdout
    if re.search(r"Non-2xx or 3xx responses: (\d+)", out):
        raise SystemExit(f"wrk saw error responses from {url}")
    def pct(p):
        m = re.search(rf"{p}%\s+([\d.]+)(us|ms|s)\b", out)
        return float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
    return pct(50), pct(90)


def login(idp, client, secret, redirect, subject):
    verifier = secrets.token_urlsafe(32)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    q = urllib.parse.urlencode({"response_type": "code", "client_id": client, "redirect_uri": redirect, "scope": "openid offline_access",
                                "state": "s", "code_challenge": challenge, "code_challenge_method": "S256", "login_hint": subject})
    status, headers, _ = http("GET", f"{idp}/authorize?{q}")
    code = urllib.parse.parse_qs(urllib.parse.urlparse(headers["Location"]).query)["code"][0]
    _, _, body = http("POST", f"{idp}/token", form={"grant_type": "authorization_code", "code": code, "redirect_uri": redirect,
                                                   "code_verifier": verifier}, basic=(client, secret))
    return json.loads(body)


def main():
    env, op, idp = standalone()
    work = pathlib.Path(tempfile.mkdtemp(prefix="tokenbroker-bench-"))
    results, broker, redirect = token_bench(env, op, idp, work)
    results.update(callback_bench(broker, idp, op, redirect))

    for p in procs:
        if p.args[0] == BIN / "tokenbroker":
            p.send_signal(signal.SIGTERM)
            p.wait()
    results.update(jose_bench())
    results.update(wheel_bench())
    results.update(storm_rounds(env, op, idp))
    results.update(faults_bench(env, op, idp))
    results.update(probe_bench(env, op, idp))
    results.update(policy_bench())
    results.update(scale_bench(env, op, idp))
    results.update(million_bench(env))
    results.update(signout_bench(env, op, idp))
    results.update(migrations_bench())
    results.update(provider_https_bench(env, op, idp))
    results.update(oauth2_storm_rounds(env, op, idp))
    results.update(__import__("proxy_bench").proxy_bench(env, op, idp))
    results.update(__import__("mtls_bench").mtls_bench(env, op))
    if os.environ.get("TOKENBROKER_BENCH_PATRONI_URL"):   # last: it moves DATABASE_URL to the Patroni cluster
        results.update(__import__("failover_bench").on_patroni())
    results.update({"date": time.strftime("%Y-%m-%d"),
                    "machine": f"{os.cpu_count()} cores, wrk -t2 -c{CONNECTIONS} -d{DURATION} x {ROUNDS} interleaved rounds on the same machine, medians"})
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    previous.update(results)
    OUT.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")
    print(f"\n{'measure':34} {'value':>12}")
    for k in ["token_fetch_rps", "nginx_static_rps", "token_fetch_vs_nginx", "token_fetch_p99_ms", "nginx_static_p99_ms",
              "mhd_constant_vs_nginx", "mhd_constant_p99_ms", "http_layer_constant_vs_nginx", "token_fetch_vs_http_layer_constant",
              "token_fetch_cpu_us_per_request", "nginx_cpu_us_per_request", "token_fetch_cpu_vs_nginx", "token_fetch_thread_a_core_cpu_us_per_request", "token_fetch_cpu_vs_thread_a_core", "batch1000_ms", "batch1000_p90_ms", "batch1000_python_client_ms", "batch1000_unknown_ms", "dpop_proofs_per_s_http", "dpop_handout_vs_token_fetch",
              "dpop_proofs_per_s_in_process", "dpop_proofs_vs_openssl_speed_sign", "exchange_cached_rps", "exchange_cached_vs_token_fetch",
              "id_token_verify_per_s_es256", "id_token_verify_per_s_rs256",
              "id_token_verify_per_s_ps256", "es256_vs_openssl_speed", "rs256_vs_openssl_speed", "callbacks_per_s",
              "login_flows_per_s", "wheel_ops_per_s", "wheel_bytes_per_timer", "refresh_storm_seconds",
              "refresh_storm_idp_calls", "refresh_storm_duplicates", "refresh_cpu_ms_per_refresh", "refresh_context_switches_per_refresh", "refresh_fault_reuse",
              "refresh_fault_sessions_lost", "refresh_fault_seconds", "refresh_fault_cpu_ms_per_refresh", "handout_probe_idle_p99_ms",
              "handout_probe_storm_p50_ms", "handout_probe_storm_p99_ms", "ready_seconds_1m_sessions",
              "ready_rss_mb_1m_sessions", "signout_sessions_per_s", "signout_vs_idp_direct", "idle_policy_idp_refreshes_per_hour",
              "always_policy_idp_refreshes_per_hour", "token_fetch_rps_stored"]:
        print(f"{k:34} {results[k]:>12}")
    print(f"\nwritten to {OUT.relative_to(ROOT)}")
    shutil.rmtree(work, ignore_errors=True)


def token_bench(env, op, idp, work):
    """Token fetch against nginx serving the same bytes, interleaved rounds; the batch of 1,000
    cached sessions and of 1,000 unknown ids. Leaves its broker running (the callback bench
    uses it); returns the figures, the broker's URL and its redirect URI."""
    broker_port = free_port()
    broker = f"http://127.0.0.1:{broker_port}"
    served = start([BIN / "tokenbroker", "serve"], {**env, "TOKENBROKER_ACCESS_LOG": "false", "TOKENBROKER_LISTEN": f"127.0.0.1:{broker_port}"},
                   open(work / "broker.log", "w"))
    wait_ready(broker + "/healthz")

    redirect = broker + "/v1/callback"
    http("POST", idp + "/admin/clients", body={"client_id": "bench-app", "client_secret": "bench-secret", "redirect_uris": [redirect]})
    http("PUT", broker + "/v1/tenants/bench", op, {"name": "Bench"})
    http("PUT", broker + "/v1/tenants/bench/clients/app", op, {"issuer": idp, "client_id": "bench-app", "auth_method": "client_secret_basic",
         "client_secret": "bench-secret", "redirect_uri": redirect, "scopes": ["openid", "offline_access"]})
    key = json.loads(http("POST", broker + "/v1/apikeys", op, {"name": "w", "roles": ["worker", "admin", "enrol"], "tenants": ["bench"]})[2])["key"]
    # A DPoP-bound session (RFC 9449), signed in through the broker: its hand-outs mint a proof each.
    http("POST", idp + "/admin/clients", body={"client_id": "bench-dpop", "client_secret": "bench-secret", "redirect_uris": [redirect],
                                               "dpop_required": True})
    http("PUT", broker + "/v1/tenants/bench/clients/dpop", op, {"issuer": idp, "client_id": "bench-dpop", "auth_method": "client_secret_basic",
         "client_secret": "bench-secret", "redirect_uri": redirect, "scopes": ["openid", "offline_access"], "dpop": True})
    _, _, started = http("POST", broker + "/v1/tenants/bench/logins", key, {"client": "dpop", "login_hint": "dora"})
    back = http("GET", json.loads(started)["authorization_url"])[1]["Location"]
    dpop_sid = json.loads(http("GET", back)[2])["session_id"]
    dpop_url = f"{broker}/v1/tenants/bench/sessions/{dpop_sid}/token"
    dpop_body = '{"min_ttl":60,"dpop":{"htm":"GET","htu":"https://api.example/v1/items"}}'
    status, _, minted = http("POST", dpop_url, key, json.loads(dpop_body))
    assert status == 200 and len(json.loads(minted)["dpop_proofs"]) == 1, minted
    dpop_script = work / "dpop.lua"
    dpop_script.write_text(f'wrk.method = "POST"\nwrk.body = \'{dpop_body}\'\nwrk.headers["Authorization"] = "Bearer {key}"\n'
                           'wrk.headers["Content-Type"] = "application/json"\n')

    # One real session: signed in at the IdP, imported without an access token, so that the
    # broker refreshes it once; the measured path then serves it from memory.
    tokens = login(idp, "bench-app", "bench-secret", redirect, "alice")
    sid = json.loads(http("POST", broker + "/v1/tenants/bench/sessions:import", key,
                          {"client": "app", "subject": "alice", "refresh_token": tokens["refresh_token"]})[2])["session_id"]
    token_url = f"{broker}/v1/tenants/bench/sessions/{sid}/token"
    status, _, sample = http("POST", token_url, key, {"min_ttl": 60})
    assert status == 200, sample
    # A delegated token (RFC 8693) of the plain session, exchanged once and then served from the cache.
    exchange_body = '{"min_ttl":60,"exchange":{"audience":"https://api.example","scope":"openid"}}'
    status, _, exchanged = http("POST", token_url, key, json.loads(exchange_body))
    assert status == 200 and json.loads(exchanged)["issued_token_type"].endswith("access_token"), exchanged
    exchange_script = work / "exchange.lua"
    exchange_script.write_text(f'wrk.method = "POST"\nwrk.body = \'{exchange_body}\'\nwrk.headers["Authorization"] = "Bearer {key}"\n'
                               'wrk.headers["Content-Type"] = "application/json"\n')

    # A plain OAuth 2.0 session (Salesforce-like: members of its provider's answer kept with it and
    # handed out as metadata), imported with a valid access token: the same cached path, a longer document.
    http("PUT", broker + "/v1/tenants/bench/clients/plain", op, {"protocol": "oauth2", "client_id": "bench-app", "auth_method": "client_secret_basic",
         "client_secret": "bench-secret", "redirect_uri": redirect, "scopes": ["api", "refresh_token"],
         "descriptor": {"endpoints": {"authorization": idp + "/authorize", "token": idp + "/token"},
                        "token_response": {"keep": {"instance_url": "/instance_url", "id": "/id"}}, "grant": {"refresh_token": "reusable"}}})
    exp_plain = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 7200))
    status, _, imported = http("POST", broker + "/v1/tenants/bench/sessions:import", key, {
        "client": "plain", "subject": "https://login.example/id/00D5e000000Abcd/0055e000001Wxyz", "refresh_token": secrets.token_urlsafe(64),
        "access_token": "00D5e000000Abcd!" + secrets.token_urlsafe(84), "expires_at": exp_plain,
        "metadata": {"instance_url": "https://acme.my.example.com", "id": "https://login.example/id/00D5e000000Abcd/0055e000001Wxyz"}})
    assert status == 201, imported
    oauth2_url = f"{broker}/v1/tenants/bench/sessions/{json.loads(imported)['session_id']}/token"
    status, _, plain_sample = http("POST", oauth2_url, key, {"min_ttl": 60})
    assert status == 200 and json.loads(plain_sample)["metadata"]["instance_url"].startswith("https://"), plain_sample

    script = work / "token.lua"
    script.write_text(f'wrk.method = "POST"\nwrk.body = \'{{"min_ttl":60}}\'\nwrk.headers["Authorization"] = "Bearer {key}"\n'
                      'wrk.headers["Content-Type"] = "application/json"\n')
    # nginx serves the very bytes the broker answers with, as a static file.
    html = work / "html"
    html.mkdir()
    (html / "token.json").write_bytes(sample)
    for path in (work, html, html / "token.json"):   # nginx workers run unprivileged
        path.chmod(0o755)
    ngx_port = free_port()
    (work / "logs").mkdir()
    (work / "nginx.conf").write_text(f"""worker_processes 2; pid {work}/nginx.pid; error_log {work}/logs/error.log;
events {{ worker_connections 1024; }}
http {{ access_log off; server {{ listen 127.0.0.1:{ngx_port}; root {html}; location / {{ default_type application/json; }} }} }}
""")
    subprocess.run(["nginx", "-c", str(work / "nginx.conf"), "-p", str(work)], check=True, capture_output=True)
    # The server's own ceilings, sent the very request the broker gets (POST, body, API key) and
    # answering its bytes with its headers on as many threads: libmicrohttpd alone (C), and the
    # broker's HTTP layer (MHDServer, front door, header pass) with a constant handler.
    threads = str(http_threads(served.pid))   # as many as the broker runs (its default, or as set)
    ceilings = {}
    for name in ("mhd-constant", "http-ceiling"):
        port = free_port()
        ceilings[name] = (start([BIN / name, str(port), threads, str(html / "token.json")]), f"http://127.0.0.1:{port}/token")
    try:
        wait_ready(f"http://127.0.0.1:{ngx_port}/token.json")
        for _, url in ceilings.values():
            wait_ready(url)
        workers = children(int((work / "nginx.pid").read_text()))
        wrk(token_url, str(script))  # warm-up
        # Interleaved rounds, medians reported: the two cores are shared with wrk, and single
        # runs of either server vary by ±15% on this machine.
        rounds = []
        for _ in range(ROUNDS):
            t = wrk(token_url, str(script), [served.pid])
            n = wrk(f"http://127.0.0.1:{ngx_port}/token.json", None, workers)
            d = wrk(dpop_url, str(dpop_script))
            x = wrk(token_url, str(exchange_script))
            m = wrk(ceilings["mhd-constant"][1], str(script), [ceilings["mhd-constant"][0].pid])
            h = wrk(ceilings["http-ceiling"][1], str(script), [ceilings["http-ceiling"][0].pid])
            o = wrk(oauth2_url, str(script), [served.pid])
            rounds.append((t, n, d, x, m, h, o))
            print(f"round: token {t[0]:.0f} req/s p99 {t[1]:.2f} ms | nginx {n[0]:.0f} req/s p99 {n[1]:.2f} ms | ratio {t[0] / n[0]:.3f}"
                  f" | token + DPoP proof {d[0]:.0f} req/s p99 {d[1]:.2f} ms | exchanged, cached {x[0]:.0f} req/s p99 {x[1]:.2f} ms"
                  f" | libmicrohttpd constant {m[0]:.0f} req/s p99 {m[1]:.2f} ms | HTTP layer constant {h[0]:.0f} req/s p99 {h[1]:.2f} ms"
                  f" | OAuth 2.0 with metadata {o[0]:.0f} req/s p99 {o[1]:.2f} ms ({o[0] / t[0]:.3f} of token)"
                  f" | CPU µs a request: token {t[2]:.1f}, nginx {n[2]:.1f}, libmicrohttpd constant {m[2]:.1f}, HTTP layer constant {h[2]:.1f},"
                  f" OAuth 2.0 with metadata {o[2]:.1f}")
        token_rps = statistics.median(r[0][0] for r in rounds)
        token_p99 = statistics.median(r[0][1] for r in rounds)
        nginx_rps = statistics.median(r[1][0] for r in rounds)
        nginx_p99 = statistics.median(r[1][1] for r in rounds)
        ratios = [r[0][0] / r[1][0] for r in rounds]
        dpop_rps = statistics.median(r[2][0] for r in rounds)
        dpop_p99 = statistics.median(r[2][1] for r in rounds)
        dpop_ratios = [r[2][0] / r[0][0] for r in rounds]
        exchange_rps = statistics.median(r[3][0] for r in rounds)
        exchange_p99 = statistics.median(r[3][1] for r in rounds)
        exchange_ratios = [r[3][0] / r[0][0] for r in rounds]
        mhd_rps = statistics.median(r[4][0] for r in rounds)
        mhd_p99 = statistics.median(r[4][1] for r in rounds)
        layer_rps = statistics.median(r[5][0] for r in rounds)
        layer_p99 = statistics.median(r[5][1] for r in rounds)
        mhd_ratios = [r[4][0] / r[1][0] for r in rounds]
        layer_ratios = [r[5][0] / r[1][0] for r in rounds]
        token_vs_layer = [r[0][0] / r[5][0] for r in rounds]
        oauth2_ratios = [r[6][0] / r[0][0] for r in rounds]
        oauth2_cpu_ratios = [r[0][2] / r[6][2] for r in rounds]
        # CPU per request: what each server spends answering, whatever share of the two cores
        # the co-located wrk leaves it (throughput ratios depend on that share).
        cpu = {name: statistics.median(r[i][2] for r in rounds) for name, i in (("token", 0), ("nginx", 1), ("mhd", 4), ("layer", 5))}
        cpu_ratios = [r[1][2] / r[0][2] for r in rounds]
        # The default is four HTTP threads a core; the same hand-out from a second broker with
        # one thread a core (the default before), in alternation with the default one. The
        # default's CPU per request against it shows what the threads cost each other inside
        # the broker (locks held by a descheduled thread: 3.2x before ReadMostly).
        core_threads = max(2, os.cpu_count() or 2)
        core_port = free_port()
        single = start([BIN / "tokenbroker", "serve"], {**env, "TOKENBROKER_ACCESS_LOG": "false", "TOKENBROKER_HTTP_THREADS": str(core_threads),
                                                     "TOKENBROKER_LISTEN": f"127.0.0.1:{core_port}"}, open(work / "broker-thread-a-core.log", "w"))
        try:
            wait_ready(f"http://127.0.0.1:{core_port}/healthz")
            core_url = token_url.replace(broker, f"http://127.0.0.1:{core_port}")
            wrk(core_url, str(script))  # warm-up
            pairs = [(wrk(token_url, str(script), [served.pid]), wrk(core_url, str(script), [single.pid])) for _ in range(2)]
        finally:
            single.terminate()
            single.wait()
        for default, o in pairs:
            print(f"one HTTP thread a core: {core_threads} threads {o[0]:.0f} req/s, {o[2]:.1f} µs a request | default {default[0]:.0f} req/s, {default[2]:.1f} µs")
    finally:
        subprocess.run(["nginx", "-c", str(work / "nginx.conf"), "-p", str(work), "-s", "stop"], capture_output=True)
        for p, _ in ceilings.values():
            p.terminate()
            p.wait()

    # A batch of 1,000 sessions, all cached: imported grants with a valid access token.
    exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    ids = []
    for i in range(1000):
        body = {"client": "app", "subject": f"user-{i}", "refresh_token": secrets.token_urlsafe(32),
                "access_token": secrets.token_urlsafe(600), "expires_at": exp}
        ids.append(json.loads(http("POST", broker + "/v1/tenants/bench/sessions:import", key, body)[2])["session_id"])
    batch = {"min_ttl": 60, "items": [{"session_id": s} for s in ids]}
    first = http("POST", broker + "/v1/tenants/bench/tokens:batch", key, batch)
    assert first[0] == 200 and all(r["status"] == 200 for r in json.loads(first[2])["results"])
    # Timed with wrk on one connection, the body serialized once: what the broker takes. The
    # Python client's own time (serializing 1,000 items, reading a megabyte) is shown beside it.
    batch_script = work / "batch.lua"
    batch_script.write_text(f'wrk.method = "POST"\nwrk.body = [[{json.dumps(batch)}]]\nwrk.headers["Authorization"] = "Bearer {key}"\n'
                            'wrk.headers["Content-Type"] = "application/json"\n')
    batch_ms, batch_p90 = wrk_one(broker + "/v1/tenants/bench/tokens:batch", str(batch_script))
    times = []
    for _ in range(30):
        t0 = time.perf_counter()
        status, _, _ = http("POST", broker + "/v1/tenants/bench/tokens:batch", key, batch)
        times.append((time.perf_counter() - t0) * 1000)
        assert status == 200
    # A batch of 1,000 ids nobody knows: answered from one query.
    unknown = {"min_ttl": 60, "items": [{"session_id": "ses_unknown" + secrets.token_hex(8)} for _ in range(1000)]}
    status, _, body = http("POST", broker + "/v1/tenants/bench/tokens:batch", key, unknown)
    assert status == 200 and all(r["status"] == 404 for r in json.loads(body)["results"])
    unknown_script = work / "unknown.lua"
    unknown_script.write_text(f'wrk.method = "POST"\nwrk.body = [[{json.dumps(unknown)}]]\nwrk.headers["Authorization"] = "Bearer {key}"\n'
                              'wrk.headers["Content-Type"] = "application/json"\n')
    batch_unknown_ms = wrk_one(broker + "/v1/tenants/bench/tokens:batch", str(unknown_script))[0]

    return {
        "token_fetch_rps": round(token_rps), "token_fetch_p99_ms": round(token_p99, 2),
        "nginx_static_rps": round(nginx_rps), "nginx_static_p99_ms": round(nginx_p99, 2),
        "token_fetch_vs_nginx": round(statistics.median(ratios), 3),
        "token_fetch_vs_nginx_rounds": [round(r, 3) for r in ratios],
        "batch1000_ms": round(batch_ms, 2), "batch1000_p90_ms": round(batch_p90, 2),
        "batch1000_python_client_ms": round(statistics.median(times), 2),
        "batch1000_unknown_ms": round(batch_unknown_ms, 2),
        "dpop_proofs_per_s_http": round(dpop_rps), "dpop_handout_p99_ms": round(dpop_p99, 2),
        "dpop_handout_vs_token_fetch": round(statistics.median(dpop_ratios), 3),
        "exchange_cached_rps": round(exchange_rps), "exchange_cached_p99_ms": round(exchange_p99, 2),
        "exchange_cached_vs_token_fetch": round(statistics.median(exchange_ratios), 3),
        "mhd_constant_rps": round(mhd_rps), "mhd_constant_p99_ms": round(mhd_p99, 2),
        "mhd_constant_vs_nginx": round(statistics.median(mhd_ratios), 3), "mhd_constant_vs_nginx_rounds": [round(r, 3) for r in mhd_ratios],
        "http_layer_constant_rps": round(layer_rps), "http_layer_constant_p99_ms": round(layer_p99, 2),
        "http_layer_constant_vs_nginx": round(statistics.median(layer_ratios), 3),
        "token_fetch_vs_http_layer_constant": round(statistics.median(token_vs_layer), 3),
        "oauth2_metadata_handout_rps": round(statistics.median(r[6][0] for r in rounds)),
        "oauth2_metadata_handout_p99_ms": round(statistics.median(r[6][1] for r in rounds), 2),
        "oauth2_metadata_handout_vs_token_fetch": round(statistics.median(oauth2_ratios), 3),
        "oauth2_metadata_handout_vs_token_fetch_rounds": [round(r, 3) for r in oauth2_ratios],
        "oauth2_metadata_handout_cpu_vs_token_fetch": round(statistics.median(oauth2_cpu_ratios), 3),
        "token_fetch_cpu_us_per_request": round(cpu["token"], 1), "nginx_cpu_us_per_request": round(cpu["nginx"], 1),
        "mhd_constant_cpu_us_per_request": round(cpu["mhd"], 1), "http_layer_constant_cpu_us_per_request": round(cpu["layer"], 1),
        "token_fetch_cpu_vs_nginx": round(statistics.median(cpu_ratios), 3),
        "token_fetch_cpu_vs_nginx_rounds": [round(r, 3) for r in cpu_ratios],
        "token_fetch_thread_a_core_threads": core_threads,
        "token_fetch_thread_a_core_cpu_us_per_request": round(statistics.median(o[2] for _, o in pairs), 1),
        "token_fetch_cpu_vs_thread_a_core": round(statistics.median(d[2] / o[2] for d, o in pairs), 3),
    }, broker, redirect


def cpu_ms(pid):
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def switches(pid):
    """Context switches of every thread of a process so far (voluntary and not)."""
    total = 0
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            total += sum(int(l.split()[1]) for l in (task / "status").read_text().splitlines() if "ctxt_switches" in l)
        except FileNotFoundError:
            pass    # a thread that ended meanwhile
    return total


def psql(sql):
    return subprocess.run(["psql", os.environ["DATABASE_URL"], "-Atqc", sql], check=True, capture_output=True, text=True).stdout.strip()


def jose_bench():
    """ID-token verification in process (jose-bench), against `openssl speed` verifying the same
    signatures with the same library on the same machine: the ratio is what our parsing, key
    lookup and claim checks cost on top of the bare signature check."""
    r = json.loads(subprocess.run([BIN / "jose-bench"], check=True, capture_output=True, text=True).stdout)
    speed = subprocess.run(["openssl", "speed", "-seconds", "2", "ecdsap256", "rsa2048"], capture_output=True, text=True).stdout
    rsa = float(re.search(r"^rsa 2048 bits\s+\S+\s+\S+\s+\S+\s+([\d.]+)", speed, re.M).group(1))
    ec = float(re.search(r"256 bits ecdsa \(nistp256\)\s+\S+\s+\S+\s+\S+\s+([\d.]+)", speed).group(1))
    ec_sign = float(re.search(r"256 bits ecdsa \(nistp256\)\s+\S+\s+\S+\s+([\d.]+)", speed).group(1))
    r.update({"openssl_speed_verify_per_s_es256": round(ec), "openssl_speed_verify_per_s_rs256": round(rsa),
              "es256_vs_openssl_speed": round(r["id_token_verify_per_s_es256"] / ec, 3),
              "rs256_vs_openssl_speed": round(r["id_token_verify_per_s_rs256"] / rsa, 3),
              "openssl_speed_sign_per_s_es256": round(ec_sign),
              "dpop_proofs_vs_openssl_speed_sign": round(r["dpop_proofs_per_s_in_process"] / ec_sign, 3)})
    return r


def callback_bench(broker, idp, op, redirect, logins=int(os.environ.get("BENCH_LOGINS", "1000")), workers=16):
    """The OAuth callback end to end against the development IdP: `logins` logins are started
    and authorized at the IdP first (its codes live 60 s), then their callbacks run 16 at a time:
    consume the login, exchange the code (HTTP to the IdP), verify the ES256 ID token, store the
    session. Also the whole flow (start, authorize, callback) per second."""
    key = json.loads(http("POST", broker + "/v1/apikeys", op, {"name": "e", "roles": ["enrol"], "tenants": ["bench"]})[2])["key"]

    def start_and_authorize(i):
        _, _, body = http("POST", broker + "/v1/tenants/bench/logins", key, {"client": "app", "login_hint": f"cb-{i}"})
        return http("GET", json.loads(body)["authorization_url"])[1]["Location"]

    def callback(url):
        status, _, body = http("GET", url)
        assert status == 200, body
        return status

    with ThreadPoolExecutor(workers) as pool:
        t0 = time.perf_counter()
        urls = list(pool.map(start_and_authorize, range(logins)))
        prepare = time.perf_counter() - t0
        t0 = time.perf_counter()
        list(pool.map(callback, urls))
        callbacks = time.perf_counter() - t0
    flows = logins / (prepare + callbacks)
    print(f"callbacks: {logins / callbacks:.0f}/s ({logins} logins, {workers} at a time); whole login flows: {flows:.0f}/s")
    return {"callbacks_per_s": round(logins / callbacks), "login_flows_per_s": round(flows), "callback_bench_logins": logins}


def signout_bench(env, op, idp, sessions=int(os.environ.get("BENCH_SIGNOUT_SESSIONS", "10000")), workers=16):
    """A bulk sign-out of `sessions` sessions (real grants at the development IdP) by one replica
    with the per-client rate limit lifted, from POST to every session confirmed revoked at the
    IdP. Reference in the same run: the same RFC 7009 calls (refresh + access token per session)
    made straight to the IdP by this script, 16 at a time."""
    (p,), (url,) = start_brokers(env, 1, {"TOKENBROKER_SIGNOUT_RATE_PER_CLIENT": "0"})
    tenant, app = "signout-bench", "signout-app"
    redirect = url + "/v1/callback"
    http("POST", idp + "/admin/clients", body={"client_id": app, "client_secret": "so-secret", "redirect_uris": [redirect]})
    http("PUT", f"{url}/v1/tenants/{tenant}", op, {"name": "Sign-out bench"})
    http("PUT", f"{url}/v1/tenants/{tenant}/clients/app", op, {"issuer": idp, "client_id": app, "auth_method": "client_secret_basic",
         "client_secret": "so-secret", "redirect_uri": redirect, "scopes": ["openid", "offline_access"]})
    key = json.loads(http("POST", url + "/v1/apikeys", op, {"name": "so", "roles": ["admin"], "tenants": [tenant]})[2])["key"]
    subjects = [f"so-{i}" for i in range(sessions)]
    grants = json.loads(http("POST", idp + "/admin/grants", body={"client_id": app, "subjects": subjects})[2])["refresh_tokens"]
    exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))

    def import_one(sub):
        status, _, body = http("POST", f"{url}/v1/tenants/{tenant}/sessions:import", key,
                               {"client": "app", "subject": sub, "refresh_token": grants[sub], "access_token": "at-" + sub, "expires_at": exp})
        assert status == 201, body

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(import_one, subjects))
    cpu0 = cpu_ms(p.pid)
    t0 = time.perf_counter()
    status, _, body = http("POST", f"{url}/v1/tenants/{tenant}/signouts", key, {"all": True})
    assert status == 202, body
    job = json.loads(body)
    while not (job["state"] == "done" and job["idp_pending"] == 0):
        time.sleep(0.2)
        job = json.loads(http("GET", f"{url}/v1/tenants/{tenant}/signouts/{job['job_id']}", key)[2])
    elapsed = time.perf_counter() - t0
    cpu = cpu_ms(p.pid) - cpu0
    stats = json.loads(http("GET", f"{idp}/stats?client_id={app}")[2])
    assert job["revoked"] == sessions and job["failed"] == 0 and stats["active_families"] == 0, (job, stats)

    # Reference: the IdP's revocation endpoint driven directly, two calls per session.
    other = [f"direct-{i}" for i in range(sessions)]
    direct = json.loads(http("POST", idp + "/admin/grants", body={"client_id": app, "subjects": other})[2])["refresh_tokens"]

    def revoke_direct(sub):
        for token, hint in ((direct[sub], "refresh_token"), ("at-" + sub, "access_token")):
            assert http("POST", f"{idp}/revoke", form={"token": token, "token_type_hint": hint}, basic=(app, "so-secret"))[0] == 200

    t1 = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(revoke_direct, other))
    direct_elapsed = time.perf_counter() - t1
    p.send_signal(signal.SIGTERM)
    p.wait()
    rate, ref = sessions / elapsed, sessions / direct_elapsed
    print(f"sign-out: {sessions} sessions in {elapsed:.1f} s = {rate:.0f}/s (broker CPU {cpu / sessions:.3f} ms/session); "
          f"the same revocations straight to the IdP: {ref:.0f} sessions/s; ratio {rate / ref:.3f}")
    return {"signout_sessions_per_s": round(rate), "signout_seconds": round(elapsed, 2), "signout_sessions": sessions,
            "signout_cpu_ms_per_session": round(cpu / sessions, 3), "idp_direct_revocations_sessions_per_s": round(ref),
            "signout_vs_idp_direct": round(rate / ref, 3)}


def standalone():
    """What a benchmark run alone needs: the brokers' environment, an operator key, a dev IdP."""
    env = {"TOKENBROKER_SEALING_KEYS": "k1:" + base64.b64encode(os.urandom(32)).decode(), "TOKENBROKER_LOG_LEVEL": "warn"}
    subprocess.run([BIN / "tokenbroker", "migrate"], env={**os.environ, **env}, check=True, capture_output=True)
    op = subprocess.run([BIN / "tokenbroker", "apikey", "create", "--role", "operator", "--name", "bench", "--all-tenants"], env={**os.environ, **env},
                        check=True, capture_output=True, text=True).stdout.strip()
    idp_port = free_port()
    start([BIN / "dev-idp", "--listen", f"127.0.0.1:{idp_port}"])
    wait_ready(f"http://127.0.0.1:{idp_port}/jwks")
    return env, op, f"http://127.0.0.1:{idp_port}"


def signout_only():
    """`bench.py signout`: the sign-out benchmark alone; merged into bench/results.json."""
    r = signout_bench(*standalone())
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    previous.update(r)
    OUT.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")
    print(json.dumps(r, indent=2))


def wheel_bench():
    out = subprocess.run([BIN / "wheel-bench"], check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    return {"wheel_ops_per_s": r["wheel_ops_per_s"], "wheel_bytes_per_timer": r["wheel_bytes_per_timer"],
            "wheel_drain_1m_seconds": r["wheel_drain_1m_seconds"]}


def start_brokers(env, n, extra):
    ports = [free_port() for _ in range(n)]
    ps = [start([BIN / "tokenbroker", "serve"], {**env, **extra, "TOKENBROKER_LISTEN": f"127.0.0.1:{p}"}) for p in ports]
    for p in ports:
        wait_ready(f"http://127.0.0.1:{p}/healthz")
    return ps, [f"http://127.0.0.1:{p}" for p in ports]


def storm_rounds(env, op, idp, rounds=int(os.environ.get("BENCH_STORM_ROUNDS", "3"))):
    """The storm, `rounds` times (fresh tenant and IdP client each), medians and every round."""
    runs = [storm_bench(env, op, idp, tag=str(r)) for r in range(rounds)]
    for r in runs:
        print(f"storm round: {r['refresh_storm_seconds']} s, {r['refresh_storm_idp_calls']} calls, "
              f"{r['refresh_storm_duplicates']} duplicates, {r['refresh_cpu_ms_per_refresh']} ms CPU/refresh")
    out = {k: statistics.median(r[k] for r in runs) for k in ["refresh_storm_seconds", "refresh_cpu_ms_per_refresh", "refresh_pg_cpu_ms_per_refresh",
                                                           "refresh_context_switches_per_refresh"]}
    out["refresh_storm_idp_calls"] = max(r["refresh_storm_idp_calls"] for r in runs)
    out["refresh_storm_refreshes_ok"] = min(r["refresh_storm_refreshes_ok"] for r in runs)
    out["refresh_storm_duplicates"] = max(r["refresh_storm_duplicates"] for r in runs)
    out["refresh_cpu_ms_per_refresh_rounds"] = [r["refresh_cpu_ms_per_refresh"] for r in runs]
    out["refresh_storm_seconds_rounds"] = [r["refresh_storm_seconds"] for r in runs]
    return out


def storm_setup(env, op, idp, sessions, tag, personality=None):
    """A tenant and IdP client with `sessions` grants imported through one replica, all made due
    within the same 10 s starting 3 s from now (schedule column only). With `personality` the
    client is a plain OAuth 2.0 one at that personality of the development IdP (its RFC 8414
    metadata, its answers), the grants made there. Returns the tenant, the IdP client and when
    the storm starts."""
    ps, urls = start_brokers(env, 1, {})
    b = urls[0]
    tenant, app = f"storm{tag}", f"storm-app{tag}"
    http("POST", idp + "/admin/clients", body={"client_id": app, "client_secret": "storm-secret",
                                                "redirect_uris": [b + "/v1/callback"], "access_ttl": 3600})
    http("PUT", f"{b}/v1/tenants/{tenant}", op, {"name": "Storm"})
    client = {"issuer": idp, "client_id": app, "auth_method": "client_secret_basic", "client_secret": "storm-secret",
              "redirect_uri": b + "/v1/callback", "scopes": ["openid", "offline_access"], "max_concurrent_refreshes": 16}
    if personality:
        client.update({"protocol": "oauth2", "issuer": f"{idp}/p/{personality}", "scopes": ["read"]})
    status, _, body = http("PUT", f"{b}/v1/tenants/{tenant}/clients/app", op, client)
    assert status == 201, body
    key = json.loads(http("POST", b + "/v1/apikeys", op, {"name": "s", "roles": ["admin"], "tenants": [tenant]})[2])["key"]
    subjects = [f"s-{i}" for i in range(sessions)]
    grants = {"client_id": app, "subjects": subjects, **({"personality": personality} if personality else {})}
    tokens = json.loads(http("POST", idp + "/admin/grants", body=grants)[2])["refresh_tokens"]
    import_storm_sessions(b, tenant, key, [("app", sub, tokens[sub]) for sub in subjects])
    for p in ps:
        p.send_signal(signal.SIGTERM)
        p.wait()
    psql(f"UPDATE sessions SET next_refresh_at = now() + interval '3 seconds' + random() * interval '10 seconds' WHERE tenant_id = '{tenant}'")
    return tenant, app, time.time() + 3


def import_storm_sessions(b, tenant, key, grants):
    """Imports (client, subject, refresh token) grants through broker `b`, 16 at a time, each with
    an access token said to live an hour (so that nothing is refreshed at import)."""
    exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))

    def imp(grant):
        client, sub, rt = grant
        st, _, body = http("POST", f"{b}/v1/tenants/{tenant}/sessions:import", key, {"client": client, "subject": sub,
                            "refresh_token": rt, "access_token": "storm-" + secrets.token_urlsafe(24), "expires_at": exp})
        assert st == 201, body
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(imp, grants))


def pg_cpu():
    """CPU ms of every PostgreSQL process now, by pid (backends come and go with connections)."""
    out = {}
    for d in pathlib.Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "comm").read_text().strip() == "postgres":
                    out[int(d.name)] = cpu_ms(int(d.name))
            except OSError:
                pass
    return out


def pg_statements():
    """Mean ms of a refresh's row read and of the write + notify since the last reset, from
    pg_stat_statements (None when the server does not preload it). The row read is ms per row
    read: a due refresh's row comes with its timer tick's others (`id = ANY`, one statement for
    many rows) and takes no lock since 2026-12-04; a locked re-read (an on-demand refresh, or a
    stop) reads one row a call. Either one scanning the tenant shows here."""
    try:
        read = "(query LIKE '%pg_try_advisory_xact_lock%' OR (query LIKE 'SELECT id, client_id%' AND query LIKE '%= ANY%'))"
        row = psql(f"SELECT coalesce(sum(total_exec_time) FILTER (WHERE {read}) / nullif(sum(rows) FILTER (WHERE {read}), 0), 0), "
                   "coalesce(sum(total_exec_time) FILTER (WHERE query LIKE 'WITH updated AS%') / "
                   "nullif(sum(calls) FILTER (WHERE query LIKE 'WITH updated AS%'), 0), 0) FROM pg_stat_statements")
        lock, write = (float(x) for x in row.split("|"))
        return lock, write
    except subprocess.CalledProcessError:
        return None, None


def pg_statements_reset():
    try:
        psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        psql("SELECT pg_stat_statements_reset()")
    except subprocess.CalledProcessError:
        pass


def storm_drain(env, idp, app, sessions, t0, during=None, drained_hook=None):
    """Three replicas drain the storm (`during(t0, urls)` runs alongside, e.g. a fault;
    `drained_hook()` when the last session is refreshed, before the replicas stop); returns the
    seconds until every session was refreshed at the IdP, the brokers' CPU ms, the IdP's stats
    and PostgreSQL's CPU ms over the same time."""
    ps, urls = start_brokers(env, 3, {})
    before = {p.pid: cpu_ms(p.pid) for p in ps}
    switched = {p.pid: switches(p.pid) for p in ps}
    pg_before = pg_cpu()
    if during:
        during(t0, urls)
    while time.time() - t0 < 240:
        stats = json.loads(http("GET", f"{idp}/stats?client_id={app}")[2])
        if stats["refreshes_ok"] >= sessions:
            break
        time.sleep(0.1)
    drained = time.time() - t0
    if drained_hook:
        drained_hook()
    time.sleep(1)   # let anything straggling show up in the counts
    cpu = sum(cpu_ms(p.pid) - before[p.pid] for p in ps)
    switched = sum(switches(p.pid) - switched[p.pid] for p in ps)
    pg = sum(v - pg_before.get(pid, 0) for pid, v in pg_cpu().items())
    stats = json.loads(http("GET", f"{idp}/stats?client_id={app}&times=1")[2])
    stats["broker_switches"] = switched
    for p in ps:
        p.send_signal(signal.SIGTERM)
        p.wait()
    stats["pg_cpu_ms"] = pg
    return drained, cpu, stats


def storm_bench(env, op, idp, sessions=10_000, tag="", personality=None):
    """10,000 sessions due within the same 10 s, three replicas, one IdP. The sessions are
    imported through one replica, made due in the database, then three replicas start and
    find them in their first load. With `personality`: a plain OAuth 2.0 provider's sessions."""
    tenant, app, t0 = storm_setup(env, op, idp, sessions, tag, personality)
    drained, cpu, stats = storm_drain(env, idp, app, sessions, t0)
    twice = sum(1 for t in stats["refresh_times"].values() if len(t) > 1)
    # The storm's sessions would be due again within the hour: keep later rounds to their own.
    psql(f"UPDATE sessions SET state = 'revoked' WHERE tenant_id = '{tenant}'")
    return {"refresh_storm_seconds": round(drained, 2), "refresh_storm_idp_calls": stats["token_calls"].get("refresh_token", 0),
            "refresh_storm_refreshes_ok": stats["refreshes_ok"], "refresh_storm_duplicates": twice + stats["reuse_detected"],
            "refresh_cpu_ms_per_refresh": round(cpu / sessions, 3), "refresh_pg_cpu_ms_per_refresh": round(stats["pg_cpu_ms"] / sessions, 3),
            "refresh_context_switches_per_refresh": round(stats["broker_switches"] / sessions, 2)}


HTTPS_STORM_SESSIONS = int(os.environ.get("BENCH_HTTPS_STORM_SESSIONS", "10000"))
HTTPS_STORM_HOSTS = [int(x) for x in os.environ.get("BENCH_HTTPS_STORM_HOSTS", "1,100,1000").split(",")]
HTTPS_KEY = os.environ.get("BENCH_HTTPS_KEY", "provider_https")
HTTPS_STORM_TIMEOUT = int(os.environ.get("BENCH_HTTPS_STORM_TIMEOUT", "300"))   # seconds a drain may take


def https_idp(work):
    """A test CA, a `*.idp.localhost` certificate from it, and the development IdP serving it over
    HTTPS with every `<label>.idp.localhost` host an issuer of its own (the broker's libcurl
    resolves `*.localhost` to loopback itself). Returns the IdP's base URL for the test controls
    (127.0.0.1, in the certificate too), its port, the CA file and the process."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)
    ca, key = work / "provider-ca.pem", work / "provider-ca.key"
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-keyout", str(key), "-out", str(ca), "-subj", "/CN=bench provider CA")
    (work / "idp.ext").write_text("subjectAltName=DNS:*.idp.localhost,DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(work / "idp.key"),
            "-out", str(work / "idp.csr"), "-subj", "/CN=idp.localhost")
    openssl("x509", "-req", "-in", str(work / "idp.csr"), "-CA", str(ca), "-CAkey", str(key), "-CAcreateserial", "-days", "2",
            "-extfile", str(work / "idp.ext"), "-out", str(work / "idp.pem"))
    trust(ca)
    port = free_port()
    p = start([BIN / "dev-idp", "--listen", f"127.0.0.1:{port}", "--tls-cert", str(work / "idp.pem"), "--tls-key", str(work / "idp.key"),
               "--issuer-hosts", "idp.localhost"])
    wait_ready(f"https://127.0.0.1:{port}/jwks")
    return f"https://127.0.0.1:{port}", port, ca, p


TLS_CONTEXT = None


def trust(ca_file):
    """From now on the benchmark's HTTP client also trusts `ca_file` (the development IdP's CA)."""
    global opener, TLS_CONTEXT
    import ssl
    TLS_CONTEXT = ssl.create_default_context()
    TLS_CONTEXT.load_verify_locations(cafile=str(ca_file))
    opener = urllib.request.build_opener(NoRedirect, urllib.request.HTTPSHandler(context=TLS_CONTEXT))


class StatsPoller:
    """The IdP's /stats of all clients on one kept-alive connection, so that polling it during a
    storm adds (almost) nothing to the connections the IdP counts; `own` is how many connections
    the poller opened, to be taken off the IdP's count."""

    def __init__(self, base):
        u = urllib.parse.urlparse(base)
        self.host, self.port, self.tls, self.conn, self.own = u.hostname, u.port, u.scheme == "https", None, 0

    def get(self):
        for _ in range(3):
            if self.conn is None:
                self.conn = (http_client.HTTPSConnection(self.host, self.port, context=TLS_CONTEXT, timeout=30) if self.tls
                             else http_client.HTTPConnection(self.host, self.port, timeout=30))
                self.own += 1
            try:
                self.conn.request("GET", "/stats")
                return json.loads(self.conn.getresponse().read())
            except (OSError, http_client.HTTPException):
                self.conn.close()
                self.conn = None
        raise SystemExit("the IdP's /stats does not answer")

    def close(self):
        if self.conn:
            self.conn.close()


def rss_mb(pid):
    return next(int(l.split()[1]) for l in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines() if l.startswith("VmRSS:")) / 1024


def broker_provider_metrics(url):
    """The broker's provider-connection counters from /metrics (None where it has none yet):
    connections opened and reused, TLS handshakes full and resumed."""
    status, _, body = http("GET", url + "/metrics")
    found = {}
    if status == 200:
        for line in body.decode().splitlines():
            m = re.match(r'tokenbroker_provider_(connections|tls_handshakes)_total\{[^}]*kind="(\w+)"[^}]*\}\s+([\d.e+]+)', line)
            if m:
                k = f"{m.group(1)}_{m.group(2)}"
                found[k] = found.get(k, 0) + float(m.group(3))
    return {k: (int(found[k]) if k in found else None) for k in
            ["connections_opened", "connections_reused", "tls_handshakes_full", "tls_handshakes_resumed"]}


def provider_storm(env, op, admin, issuers, sessions, tag):
    """`sessions` sessions spread evenly over one client per issuer in `issuers`, imported through
    one replica with their access tokens, made due at the same instant 3 s ahead; then one replica
    drains them. Returns what the IdP and the broker counted over the drain, and the broker's CPU
    per client registration (each fetches its issuer's discovery document)."""
    # Due sessions are loaded every 10 s, so that the warm storm below can come 12 s after the
    # cold one: within the development IdP's idle timeout (30 s), its connections still open.
    extra = {"TOKENBROKER_LOG_LEVEL": "warn", "TOKENBROKER_REFRESH_LOAD_SECONDS": "10"}
    ps, urls = start_brokers(env, 1, extra)
    b = urls[0]
    tenant = f"pstorm{tag}"
    http("PUT", f"{b}/v1/tenants/{tenant}", op, {"name": "Provider storm"})
    clients = [(f"pstorm{tag}-{j}", issuer) for j, issuer in enumerate(issuers)]
    for client, _ in clients:
        st, _, body = http("POST", admin + "/admin/clients", body={"client_id": client, "client_secret": "storm-secret",
                                                                  "redirect_uris": [b + "/v1/callback"], "access_ttl": 3600})
        assert st == 201, body

    def register(j):
        client, issuer = clients[j]
        st, _, body = http("PUT", f"{b}/v1/tenants/{tenant}/clients/c{j}", op, {
            "issuer": issuer, "client_id": client, "auth_method": "client_secret_basic", "client_secret": "storm-secret",
            "redirect_uri": b + "/v1/callback", "scopes": ["openid", "offline_access"], "max_concurrent_refreshes": 16})
        assert st == 201, body
    cpu0, t_reg = cpu_ms(ps[0].pid), time.time()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(register, range(len(clients))))
    registration = (cpu_ms(ps[0].pid) - cpu0) / len(clients)
    registration_s = time.time() - t_reg
    key = json.loads(http("POST", b + "/v1/apikeys", op, {"name": "s", "roles": ["admin"], "tenants": [tenant]})[2])["key"]
    per = [sessions // len(clients) + (1 if j < sessions % len(clients) else 0) for j in range(len(clients))]
    work = []
    for j, (client, _) in enumerate(clients):
        subjects = [f"s{j}-{i}" for i in range(per[j])]
        if subjects:
            tokens = json.loads(http("POST", admin + "/admin/grants", body={"client_id": client, "subjects": subjects})[2])["refresh_tokens"]
            work += [(f"c{j}", sub, tokens[sub]) for sub in subjects]
    import_storm_sessions(b, tenant, key, work)
    for p in ps:
        p.send_signal(signal.SIGTERM)
        p.wait()
    psql(f"UPDATE sessions SET next_refresh_at = now() + interval '3 seconds' WHERE tenant_id = '{tenant}'")
    t0 = time.time() + 3

    poller = StatsPoller(admin)
    before = poller.get()
    # The development IdP serving this storm: the HTTPS one for an https base, else the plain one.
    idp_pid = next(p.pid for p in procs if p.args[0] == BIN / "dev-idp" and p.poll() is None and
                   ("--tls-cert" in p.args) == admin.startswith("https"))
    ps, urls = start_brokers(env, 1, extra)
    base = {"hosts": len(issuers), "sessions": sessions, "registration_cpu_ms_per_client": round(registration, 2),
            "registration_seconds": round(registration_s, 2)}
    # Cold: a replica just started — every host's first connection, a full handshake, and its
    # discovery document and keys read.
    cold = drain_storm(ps[0].pid, urls[0], idp_pid, poller, before, 1, t0, sessions)
    # Warm: the same sessions due again on the same replica — the connections kept, the
    # documents cached: what a running broker pays per refresh. Made due 12 s ahead, so that the
    # replica's next load of due sessions (every 10 s here) schedules them.
    psql(f"UPDATE sessions SET next_refresh_at = now() + interval '12 seconds' WHERE tenant_id = '{tenant}'")
    t1 = time.time() + 12
    time.sleep(max(0, t1 - time.time() - 1))
    again = poller.get()
    warm = drain_storm(ps[0].pid, urls[0], idp_pid, poller, again, poller.own, t1, sessions)
    poller.close()
    for p in ps:
        p.send_signal(signal.SIGTERM)
        p.wait()
    psql(f"UPDATE sessions SET state = 'revoked' WHERE tenant_id = '{tenant}'")
    return {**base, **cold, "warm": warm}


def drain_storm(pid, url, idp_pid, poller, before, own_before, t0, sessions):
    """Waits until the IdP has answered `sessions` more refreshes than at `before` (or the
    timeout), counting from `t0`; what the broker and the IdP spent and counted meanwhile (the
    IdP's new connections less the poller's own since `before`, when it had opened `own_before`)."""
    cpu0, idp0 = cpu_ms(pid), cpu_ms(idp_pid)
    metrics0 = broker_provider_metrics(url)
    while time.time() - t0 < HTTPS_STORM_TIMEOUT:
        now = poller.get()
        if now["refreshes_ok"] - before["refreshes_ok"] >= sessions:
            break
        time.sleep(0.1)
    drained = time.time() - t0
    time.sleep(1)   # stragglers show up in the counts
    cpu, idp_cpu = cpu_ms(pid) - cpu0, cpu_ms(idp_pid) - idp0
    rss = rss_mb(pid)
    metrics = broker_provider_metrics(url)
    after = poller.get()

    def delta(k):
        return after.get(k, 0) - before.get(k, 0)
    refreshed = delta("refreshes_ok")
    opened = delta("connections_opened") - (poller.own - own_before)
    calls = after["token_calls"].get("refresh_token", 0) - before["token_calls"].get("refresh_token", 0)
    r = {"drain_seconds": round(drained, 2), "drained_all": refreshed >= sessions,
         "refreshes_ok": refreshed, "idp_refresh_calls": calls, "reuse_detected": delta("reuse_detected"),
         "refreshes_per_s": round(refreshed / drained, 1), "broker_cpu_ms_per_refresh": round(cpu / max(refreshed, 1), 3),
         "idp_cpu_ms_per_refresh": round(idp_cpu / max(refreshed, 1), 3),
         "new_connections_per_refresh_idp": round(opened / max(refreshed, 1), 3),
         "tls_handshakes_full_idp": delta("tls_handshakes_full"), "tls_handshakes_resumed_idp": delta("tls_handshakes_resumed"),
         "broker_rss_mb_after": round(rss, 1)}
    if metrics["connections_opened"] is not None:
        metrics = {k: (v - (metrics0.get(k) or 0) if v is not None else None) for k, v in metrics.items()}
        r["new_connections_per_refresh_broker"] = round(metrics["connections_opened"] / max(refreshed, 1), 3)
    r["broker_metrics"] = metrics
    return r


def provider_https_bench(env, op, idp):
    """The refresh storm through one replica over plain HTTP (one issuer) and over HTTPS against
    1, 100 and 1,000 issuers (one client each, the sessions spread evenly), all against the
    development IdP, in one run; and the broker's CPU per client registered on a new HTTPS issuer
    (the largest case's registrations: discovery fetched at registration)."""
    work = pathlib.Path(tempfile.mkdtemp(prefix="tokenbroker-https-"))
    admin, port, ca, _ = https_idp(work)
    # What a deployment trusts: the system's public CAs and its own (the test CA), one bundle.
    bundle = work / "providers-bundle.pem"
    system = pathlib.Path("/etc/ssl/certs/ca-certificates.crt")
    bundle.write_text((system.read_text() if system.exists() else "") + ca.read_text())
    env = {**env, "TOKENBROKER_PROVIDER_CA_FILE": str(bundle)}
    runs = {}
    runs["http_1"] = provider_storm(env, op, idp, [idp], HTTPS_STORM_SESSIONS, "h1")
    for n in HTTPS_STORM_HOSTS:
        issuers = [f"https://i{j}.idp.localhost:{port}" for j in range(n)]
        runs[f"https_{n}"] = provider_storm(env, op, admin, issuers, HTTPS_STORM_SESSIONS, f"s{n}")
    for k, r in runs.items():
        for phase, x in (("cold", r), ("warm", r["warm"])):
            print(f"{k} {phase}: {x['drain_seconds']} s, {x['refreshes_per_s']} refreshes/s, {x['broker_cpu_ms_per_refresh']} ms CPU/refresh, "
                  f"{x['new_connections_per_refresh_idp']} new connections/refresh, TLS {x['tls_handshakes_full_idp']} full "
                  f"{x['tls_handshakes_resumed_idp']} resumed, RSS {x['broker_rss_mb_after']} MB"
                  + (f", registration {r['registration_cpu_ms_per_client']} ms CPU/client" if phase == "cold" else ""))
    out = {"runs": runs, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "commit": subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
           "sessions": HTTPS_STORM_SESSIONS}
    largest = max(HTTPS_STORM_HOSTS)
    out["registration_cpu_ms_per_client_https"] = runs[f"https_{largest}"]["registration_cpu_ms_per_client"]
    out["registration_clients"] = largest
    if 1 in HTTPS_STORM_HOSTS and largest > 1:
        one, many = runs["https_1"], runs[f"https_{largest}"]
        out[f"cpu_per_refresh_{largest}_vs_1"] = round(many["broker_cpu_ms_per_refresh"] / one["broker_cpu_ms_per_refresh"], 2)
        out[f"refreshes_per_s_{largest}_vs_1"] = round(many["refreshes_per_s"] / one["refreshes_per_s"], 2)
        out[f"rss_{largest}_vs_1"] = round(many["broker_rss_mb_after"] / one["broker_rss_mb_after"], 2)
        one, many = one["warm"], many["warm"]
        out[f"warm_cpu_per_refresh_{largest}_vs_1"] = round(many["broker_cpu_ms_per_refresh"] / one["broker_cpu_ms_per_refresh"], 2)
        out[f"warm_refreshes_per_s_{largest}_vs_1"] = round(many["refreshes_per_s"] / one["refreshes_per_s"], 2)
        out[f"warm_rss_{largest}_vs_1"] = round(many["broker_rss_mb_after"] / one["broker_rss_mb_after"], 2)
    out["https_1_vs_http_cpu_per_refresh"] = round(runs["https_1"]["broker_cpu_ms_per_refresh"] / runs["http_1"]["broker_cpu_ms_per_refresh"], 2) \
        if "https_1" in runs else None
    shutil.rmtree(work, ignore_errors=True)
    return {HTTPS_KEY: out}


class Probe:
    """One worker on one kept-alive connection asking a broker for the same cached token every
    10 ms until stopped; the latency of every answer in ms (time.perf_counter around request and
    read). Light on purpose (100 requests a second): it measures what a worker waits, not what the
    broker can serve, and leaves the cores to what runs beside it."""

    def __init__(self, url, key):
        self.url, self.key, self.times, self.stop = urllib.parse.urlparse(url), key, [], threading.Event()

    def run(self, until=None):
        conn = http_client.HTTPConnection(self.url.hostname, self.url.port, timeout=30)
        headers = {"Authorization": "Bearer " + self.key, "Content-Type": "application/json"}
        conn.request("POST", self.url.path, body=b'{"min_ttl":60}', headers=headers)   # untimed: loads the key and the session
        conn.getresponse().read()
        nxt = time.perf_counter()
        while not self.stop.is_set() and (until is None or time.time() < until):
            start = time.perf_counter()
            conn.request("POST", self.url.path, body=b'{"min_ttl":60}', headers=headers)
            r = conn.getresponse()
            r.read()
            assert r.status == 200, r.status
            self.times.append((time.perf_counter() - start) * 1e3)
            nxt += 0.01
            time.sleep(max(0.0, nxt - time.perf_counter()))
        conn.close()

    def percentiles(self):
        t = sorted(self.times)
        return round(t[len(t) // 2], 2), round(t[min(len(t) - 1, int(len(t) * 0.99))], 2), len(t)


def probe_bench(env, op, idp):
    """Hand-out latency while three replicas drain the 10,000-session storm: a worker asks one
    replica for a cached token of another tenant 100 times a second from the storm's start to
    its end (a round of its own: the probe's load stays out of the storm's headline figures);
    the reference is the same probe for 8 s against one broker with nothing else to do."""
    ps, urls = start_brokers(env, 1, {})
    b = urls[0]
    http("POST", idp + "/admin/clients", body={"client_id": "probe-app", "client_secret": "probe-secret",
                                                "redirect_uris": [b + "/v1/callback"], "access_ttl": 3600})
    http("PUT", f"{b}/v1/tenants/probe", op, {"name": "Probe"})
    http("PUT", f"{b}/v1/tenants/probe/clients/app", op, {"issuer": idp, "client_id": "probe-app", "auth_method": "client_secret_basic",
         "client_secret": "probe-secret", "redirect_uri": b + "/v1/callback", "scopes": ["openid", "offline_access"]})
    key = json.loads(http("POST", b + "/v1/apikeys", op, {"name": "probe", "roles": ["worker", "admin"], "tenants": ["probe"]})[2])["key"]
    refresh = json.loads(http("POST", idp + "/admin/grants", body={"client_id": "probe-app", "subjects": ["p"]})[2])["refresh_tokens"]["p"]
    exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    st, _, body = http("POST", f"{b}/v1/tenants/probe/sessions:import", key, {"client": "app", "subject": "p", "refresh_token": refresh,
                       "access_token": "probe-" + secrets.token_urlsafe(24), "expires_at": exp})
    assert st == 201, body
    path = f"/v1/tenants/probe/sessions/{json.loads(body)['session_id']}/token"
    idle = Probe(b + path, key)
    idle.run(until=time.time() + 8)
    for p in ps:
        p.send_signal(signal.SIGTERM)
        p.wait()
    tenant, app, t0 = storm_setup(env, op, idp, 10_000, "-probe")
    busy = Probe("", key)

    def during(start, urls):
        busy.url = urllib.parse.urlparse(urls[0] + path)
        time.sleep(max(0.0, start - time.time()))
        threading.Thread(target=busy.run, daemon=True).start()

    drained, cpu, stats = storm_drain(env, idp, app, 10_000, t0, during=during, drained_hook=busy.stop.set)
    psql(f"UPDATE sessions SET state = 'revoked' WHERE tenant_id = '{tenant}'")
    i50, i99, n_idle = idle.percentiles()
    b50, b99, n_busy = busy.percentiles()
    print(f"probe: idle p50 {i50} ms p99 {i99} ms ({n_idle}); during the storm p50 {b50} ms p99 {b99} ms ({n_busy}); "
          f"storm drained in {drained:.2f} s")
    return {"handout_probe_idle_p50_ms": i50, "handout_probe_idle_p99_ms": i99,
            "handout_probe_storm_p50_ms": b50, "handout_probe_storm_p99_ms": b99,
            "handout_probe_storm_drain_seconds": round(drained, 2)}


def fill_sessions(total):
    """Other tenants' rows up to `total` in `sessions` (10% revoked; the rest due in days, so no
    replica refreshes them), then VACUUM ANALYZE: the statistics know them, not what comes next."""
    psql("INSERT INTO tenants (id, name) VALUES ('filler', 'Filler') ON CONFLICT DO NOTHING")
    psql("INSERT INTO clients (tenant_id, id, issuer, client_id, auth_method, redirect_uri, scopes) VALUES "
         "('filler', 'app', 'https://idp.example', 'app', 'client_secret_basic', 'https://b/cb', '{openid}') ON CONFLICT DO NOTHING")
    have = int(psql("SELECT count(*) FROM sessions"))
    if have < total:
        psql(f"""INSERT INTO sessions (tenant_id, id, client_id, subject, issuer, scopes, access_token, access_expires_at,
                 refresh_token, state, next_refresh_at, version, granted_at, created_at, grant_expires_at)
                 SELECT 'filler', 'ses_f{have}_' || g, 'app', 'user-' || (g % 5000), 'https://idp.example', '{{openid}}', '\\x00',
                        now() + interval '1 day', '\\x00', CASE WHEN g % 10 = 0 THEN 'revoked' ELSE 'active' END,
                        now() + interval '2 days' + random() * interval '7 days', 1, now(), now() - g * interval '1 ms', now() + interval '7 days'
                 FROM generate_series(1, {total - have}) g""")
    psql("VACUUM ANALYZE sessions")


SCALE_SIZES = [int(x) for x in os.environ.get("BENCH_SCALE_SIZES", "10000,100000,1000000").split(",")]
SCALE_ROUNDS = int(os.environ.get("BENCH_SCALE_ROUNDS", "2"))


def scale_bench(env, op, idp):
    """The cost curve: the 10,000-session storm on three replicas with 10k, 100k and 1M rows
    already in `sessions`, every round's tenant imported after the last ANALYZE (autovacuum off
    for the table meanwhile), so that a plan that depends on the statistics shows every time.
    Per size and round: drain seconds, broker and PostgreSQL CPU ms per refresh, the mean ms of
    a refresh's row read (per row read: `lock_read_ms_by_stored`, named when the row was read
    under the lock) and of the write + notify (pg_stat_statements). Then the token fetch with
    1M rows stored."""
    psql("ALTER TABLE sessions SET (autovacuum_enabled = false)")
    out = {k: {} for k in ["storm_drain_seconds_by_stored", "refresh_cpu_ms_by_stored", "refresh_pg_cpu_ms_by_stored",
                           "lock_read_ms_by_stored", "write_notify_ms_by_stored"]}
    try:
        for size in SCALE_SIZES:
            fill_sessions(size)
            for r in range(SCALE_ROUNDS):
                tenant, app, t0 = storm_setup(env, op, idp, 10_000, f"-{size}-{r}")
                pg_statements_reset()
                drained, cpu, stats = storm_drain(env, idp, app, 10_000, t0)
                lock, write = pg_statements()
                psql(f"UPDATE sessions SET state = 'revoked' WHERE tenant_id = '{tenant}'")
                for k, v in [("storm_drain_seconds_by_stored", round(drained, 2)), ("refresh_cpu_ms_by_stored", round(cpu / 10_000, 3)),
                             ("refresh_pg_cpu_ms_by_stored", round(stats["pg_cpu_ms"] / 10_000, 3)),
                             ("lock_read_ms_by_stored", lock and round(lock, 3)), ("write_notify_ms_by_stored", write and round(write, 3))]:
                    out[k].setdefault(str(size), []).append(v)
                print(f"scale {size:>8} stored, round {r}: drain {drained:.2f} s, broker {cpu / 10_000:.3f} ms, "
                      f"PostgreSQL {stats['pg_cpu_ms'] / 10_000:.3f} ms per refresh, row read {lock} ms a row, write {write} ms, "
                      f"duplicates {stats['reuse_detected']}")
        out.update(token_fetch_stored(env, op, idp))
    finally:
        psql("ALTER TABLE sessions RESET (autovacuum_enabled)")
    print(f"\n{'stored':>10} {'drain s':>16} {'broker ms/refresh':>20} {'PG ms/refresh':>16} {'row read ms/row':>16}")
    for size in SCALE_SIZES:
        k = str(size)
        print(f"{size:>10} {str(out['storm_drain_seconds_by_stored'][k]):>16} {str(out['refresh_cpu_ms_by_stored'][k]):>20} "
              f"{str(out['refresh_pg_cpu_ms_by_stored'][k]):>16} {str(out['lock_read_ms_by_stored'][k]):>16}")
    return out


def token_fetch_stored(env, op, idp):
    """The cached token fetch (wrk, as in the main run) with every row of the scale bench stored."""
    (p,), (b,) = start_brokers(env, 1, {})
    tenant = "fetch-stored"
    http("POST", idp + "/admin/clients", body={"client_id": "fetch-app", "client_secret": "fs", "redirect_uris": [b + "/v1/callback"]})
    http("PUT", f"{b}/v1/tenants/{tenant}", op, {"name": "Fetch"})
    http("PUT", f"{b}/v1/tenants/{tenant}/clients/app", op, {"issuer": idp, "client_id": "fetch-app", "auth_method": "client_secret_basic",
         "client_secret": "fs", "redirect_uri": b + "/v1/callback", "scopes": ["openid", "offline_access"]})
    key = json.loads(http("POST", b + "/v1/apikeys", op, {"name": "f", "roles": ["worker", "admin"], "tenants": [tenant]})[2])["key"]
    rt = json.loads(http("POST", idp + "/admin/grants", body={"client_id": "fetch-app", "subjects": ["f"]})[2])["refresh_tokens"]["f"]
    exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    sid = json.loads(http("POST", f"{b}/v1/tenants/{tenant}/sessions:import", key, {"client": "app", "subject": "f", "refresh_token": rt,
                          "access_token": "at-" + secrets.token_urlsafe(600), "expires_at": exp})[2])["session_id"]
    script = pathlib.Path(tempfile.mkdtemp()) / "token.lua"
    script.write_text(f'wrk.method = "POST"\nwrk.body = \'{{"min_ttl":60}}\'\nwrk.headers["Authorization"] = "Bearer {key}"\n'
                      'wrk.headers["Content-Type"] = "application/json"\n')
    url = f"{b}/v1/tenants/{tenant}/sessions/{sid}/token"
    wrk(url, str(script))
    rps, p99 = wrk(url, str(script))
    stored = int(psql("SELECT count(*) FROM sessions"))
    p.send_signal(signal.SIGTERM)
    p.wait()
    print(f"token fetch with {stored} sessions stored: {rps:.0f} req/s, p99 {p99:.2f} ms")
    return {"token_fetch_rps_stored": round(rps), "token_fetch_p99_ms_stored": round(p99, 2), "token_fetch_stored_rows": stored}


def policy_bench():
    """IdP refreshes per hour for 100k sessions of which 1% are used: the idle policy against
    refreshing every session ahead of every expiry (policy-bench, simulated time)."""
    r = json.loads(subprocess.run([BIN / "policy-bench"], check=True, capture_output=True, text=True).stdout)
    print(f"refresh policy, 100k sessions, 1% used: idle {r['idle_policy_idp_refreshes_per_hour']}/h, "
          f"always {r['always_policy_idp_refreshes_per_hour']}/h")
    return r


def faults_bench(env, op, idp, sessions=int(os.environ.get("BENCH_FAULT_SESSIONS", "10000"))):
    """The storm with the IdP stalled 20 s, 4 s into it: every refresh arriving then is rotated at
    once and answered when the stall ends — past what used to be the broker's 10 s IdP timeout.
    Goals: no refresh token presented twice, no session lost, CPU per refresh as without faults."""
    tenant, app, t0 = storm_setup(env, op, idp, sessions, "-faults")

    def stall(start):
        time.sleep(max(0, start + 4 - time.time()))
        http("POST", idp + "/admin/stall", body={"seconds": 20})
    drained, cpu, stats = storm_drain(env, idp, app, sessions, t0, during=lambda start, _: threading.Thread(target=stall, args=(start,)).start())
    lost = int(psql(f"SELECT count(*) FROM sessions WHERE tenant_id = '{tenant}' AND state <> 'active'"))
    pending = int(psql(f"SELECT count(*) FROM sessions WHERE tenant_id = '{tenant}' AND attempt_id IS NOT NULL"))
    psql(f"UPDATE sessions SET state = 'revoked' WHERE tenant_id = '{tenant}'")
    r = {"refresh_fault_reuse": stats["reuse_detected"], "refresh_fault_sessions_lost": lost + pending,
         "refresh_fault_seconds": round(drained, 2), "refresh_fault_idp_calls": stats["token_calls"].get("refresh_token", 0),
         "refresh_fault_cpu_ms_per_refresh": round(cpu / sessions, 3)}
    print("refresh faults: " + ", ".join(f"{k} {v}" for k, v in r.items()))
    return r


def million_bench(env, rows=1_000_000):
    """Start-to-ready with 1,000,000 sessions in the database, and the replica's RSS then."""
    psql("INSERT INTO tenants (id, name) VALUES ('million', 'Million') ON CONFLICT DO NOTHING")
    psql("INSERT INTO clients (tenant_id, id, issuer, client_id, auth_method, redirect_uri, scopes) VALUES "
         "('million', 'app', 'https://idp.example', 'app', 'client_secret_basic', 'https://b/cb', '{openid}') ON CONFLICT DO NOTHING")
    if int(psql("SELECT count(*) FROM sessions WHERE tenant_id = 'million'")) < rows:
        # Sealed columns hold opaque bytes here: the loader never opens them.
        psql(f"""INSERT INTO sessions (tenant_id, id, client_id, subject, issuer, scopes, access_token, access_expires_at,
                 refresh_token, state, next_refresh_at, version, granted_at, created_at)
                 SELECT 'million', 'ses_m' || g, 'app', 'user-' || g, 'https://idp.example', '{{openid}}', '\\x00', now() + interval '1 day',
                        '\\x00', 'active', now() + random() * interval '1 day', 1, now(), now()
                 FROM generate_series(1, {rows}) g""")
        psql("VACUUM ANALYZE sessions")
    due = int(psql("SELECT count(*) FROM sessions WHERE state = 'active' AND next_refresh_at < now() + interval '120 seconds'"))
    port = free_port()
    t0 = time.time()
    p = start([BIN / "tokenbroker", "serve"], {**env, "TOKENBROKER_LISTEN": f"127.0.0.1:{port}"})
    while time.time() - t0 < 60:
        try:
            if http("GET", f"http://127.0.0.1:{port}/readyz")[0] == 200:
                break
        except OSError:
            pass
        time.sleep(0.01)
    ready = time.time() - t0
    time.sleep(0.5)
    rss = next(int(l.split()[1]) for l in pathlib.Path(f"/proc/{p.pid}/status").read_text().splitlines() if l.startswith("VmRSS:")) / 1024
    p.send_signal(signal.SIGTERM)
    p.wait()
    return {"ready_seconds_1m_sessions": round(ready, 3), "ready_rss_mb_1m_sessions": round(rss, 1), "ready_due_within_horizon": due}


def faults_only():
    """`bench.py faults`: the stalled storm alone, results printed, not written."""
    print(json.dumps(faults_bench(*standalone()), indent=2))


def scale_only():
    """`bench.py scale`: the cost curve alone; merged into bench/results.json."""
    env, op, idp = standalone()
    r = scale_bench(env, op, idp)
    r.update(policy_bench())
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    previous.update(r)
    OUT.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")
    print(json.dumps(r, indent=2))


def token_only():
    """`bench.py token`: the token fetch and batch figures, printed; the plain OAuth 2.0 hand-out
    with metadata against the plain hand-out and the hand-out against nginx (same rounds) are
    written to results.json."""
    env, op, idp = standalone()
    r = token_bench(env, op, idp, pathlib.Path(tempfile.mkdtemp(prefix="tokenbroker-bench-")))[0]
    print(json.dumps(r, indent=2))
    keep = {k: v for k, v in r.items() if k.startswith("oauth2_metadata_handout")}
    keep["oauth2_metadata_handout_token_fetch_vs_nginx"] = r["token_fetch_vs_nginx"]
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    previous.update(keep)
    OUT.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")


def dpop_only():
    """`bench.py dpop`: DPoP proofs minted with token hand-outs over HTTP (against the plain hand-out
    in the same rounds) and in process (against `openssl speed` ECDSA P-256 signing), and cached
    exchanged tokens (RFC 8693) against the plain hand-out; those figures are written to
    results.json, the rest printed."""
    env, op, idp = standalone()
    r = token_bench(env, op, idp, pathlib.Path(tempfile.mkdtemp(prefix="tokenbroker-bench-")))[0]
    r.update(jose_bench())
    print(json.dumps(r, indent=2))
    keep = {k: v for k, v in r.items() if "dpop" in k or "exchange" in k or k == "openssl_speed_sign_per_s_es256"}
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    previous.update(keep)
    OUT.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")


def probe_only():
    """`bench.py probe`: hand-out latency during a refresh storm alone, printed, not written."""
    print(json.dumps(probe_bench(*standalone()), indent=2))


def storm_https_only():
    """`bench.py storm-https`: the refresh storm over HTTP and over HTTPS against 1, 100 and 1,000
    issuers (BENCH_HTTPS_STORM_HOSTS, BENCH_HTTPS_STORM_SESSIONS), merged into bench/results.json
    under BENCH_HTTPS_KEY (default provider_https)."""
    r = provider_https_bench(*standalone())
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    previous.update(r)
    OUT.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")
    print(json.dumps(r, indent=2))


def oauth2_storm_rounds(env, op, idp, rounds=int(os.environ.get("BENCH_STORM_ROUNDS", "3"))):
    """The storm on a plain OAuth 2.0 provider (the development IdP's `oauth2-form` personality:
    RFC 8414 metadata, form-encoded answers, refresh tokens that rotate) and on the OpenID one,
    alternating in the same run: the broker's CPU a refresh of each, and their ratio."""
    pairs = []
    for r in range(rounds):
        oidc = storm_bench(env, op, idp, tag=f"o{r}")
        plain = storm_bench(env, op, idp, tag=f"a{r}", personality="oauth2-form")
        print(f"storm round: OpenID {oidc['refresh_cpu_ms_per_refresh']} ms CPU/refresh in {oidc['refresh_storm_seconds']} s; "
              f"OAuth 2.0 form-encoded {plain['refresh_cpu_ms_per_refresh']} ms in {plain['refresh_storm_seconds']} s, "
              f"{plain['refresh_storm_duplicates']} duplicates")
        pairs.append((oidc, plain))
    ratios = [p["refresh_cpu_ms_per_refresh"] / o["refresh_cpu_ms_per_refresh"] for o, p in pairs]
    return {"oauth2_storm": {
        "oidc_cpu_ms_per_refresh": statistics.median(o["refresh_cpu_ms_per_refresh"] for o, _ in pairs),
        "oauth2_form_cpu_ms_per_refresh": statistics.median(p["refresh_cpu_ms_per_refresh"] for _, p in pairs),
        "oauth2_vs_oidc_cpu": round(statistics.median(ratios), 3), "oauth2_vs_oidc_cpu_rounds": [round(r, 3) for r in ratios],
        "oidc_seconds": statistics.median(o["refresh_storm_seconds"] for o, _ in pairs),
        "oauth2_form_seconds": statistics.median(p["refresh_storm_seconds"] for _, p in pairs),
        "oauth2_form_duplicates": max(p["refresh_storm_duplicates"] for _, p in pairs),
        "oauth2_form_refreshes_ok": min(p["refresh_storm_refreshes_ok"] for _, p in pairs),
        "oauth2_form_pg_cpu_ms_per_refresh": statistics.median(p["refresh_pg_cpu_ms_per_refresh"] for _, p in pairs),
        "sessions": 10_000, "rounds": rounds}}


def storm_oauth2_only():
    """`bench.py storm-oauth2`: the OAuth 2.0 and OpenID storms alternating; merged into results.json."""
    r = oauth2_storm_rounds(*standalone())
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    previous.update(r)
    OUT.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")
    print(json.dumps(r, indent=2))


def storm_only():
    """`bench.py storm`: the refresh storm alone (for profiling), results printed, not written."""
    print(json.dumps(storm_rounds(*standalone(), rounds=int(os.environ.get("BENCH_STORM_ROUNDS", "1"))), indent=2))


def migrations_only():
    """`bench.py migrations`: migrations_bench alone, merged into bench/results.json."""
    r = migrations_bench()
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    previous.update(r)
    OUT.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")
    print(json.dumps(r, indent=2))


def migrations_bench():
    """The longest any write of `sessions` waited while each migration ran,
    on a table of a million sessions under a writer that never pauses (`migration-locks`): the
    migrations of sql/ as they are, and as they were before they ran outside a transaction
    (sql/ of BENCH_MIGRATIONS_OLD_REF, by default the last commit before that)."""
    import urllib.parse
    rows = int(os.environ.get("BENCH_MIGRATIONS_ROWS", "1000000"))
    old_ref = os.environ.get("BENCH_MIGRATIONS_OLD_REF", "5907cce")
    url = os.environ["DATABASE_URL"]
    parts = urllib.parse.urlsplit(url)
    def db_url(name):
        return urllib.parse.urlunsplit(parts._replace(path="/" + name))
    old_sql = pathlib.Path(tempfile.mkdtemp(prefix="tokenbroker-old-sql-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", old_ref, "sql"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(old_sql)], input=archive, check=True)
    r = {"migrations_rows": rows}
    for label, sql in (("old", old_sql / "sql"), ("new", ROOT / "sql")):
        db = "bench_migrations_" + label
        subprocess.run(["psql", url, "-qc", f"DROP DATABASE IF EXISTS {db} WITH (FORCE)", "-c", f"CREATE DATABASE {db}"], check=True)
        try:
            out = subprocess.run([BIN / "migration-locks", "--rows", str(rows), "--sql", str(sql)], check=True, capture_output=True, text=True,
                                 env={**os.environ, "DATABASE_URL": db_url(db)}).stdout
        finally:
            subprocess.run(["psql", url, "-qc", f"DROP DATABASE IF EXISTS {db} WITH (FORCE)"], check=True)
        m = json.loads(out)
        print(label, json.dumps({k: v for k, v in m.items() if k != "migrations"}))
        for x in m["migrations"]:
            print(f"  {label} {x['name']}: {x['seconds']} s, longest write wait {x['longest_write_wait_ms']} ms, {x['writes']} writes")
        suffix = "" if label == "new" else "_old"
        r["migrations_longest_write_wait_ms" + suffix] = m["longest_write_wait_ms"]
        r["migrations_worst" + suffix] = m["worst_migration"]
        r["migrations_migrate_seconds" + suffix] = m["migrate_seconds"]
        r["migrations_baseline_longest_write_ms" + suffix] = m["baseline_longest_write_ms"]
        for x in m["migrations"]:
            if x["name"][:3] in ("003", "007", "010", "013", "014", "020"):
                r[f"migrations_{x['name'][:3]}_write_wait_ms{suffix}"] = x["longest_write_wait_ms"]
    return r


try:
    {"proxy": lambda: __import__("proxy_bench").proxy_only(), "failover": lambda: __import__("failover_bench").failover_only(), "mtls": lambda: __import__("mtls_bench").mtls_only(), "storm": storm_only, "storm-https": storm_https_only, "storm-oauth2": storm_oauth2_only, "probe": probe_only, "token": token_only, "dpop": dpop_only, "signout": signout_only, "faults": faults_only, "scale": scale_only, "migrations": migrations_only}.get(sys.argv[1] if sys.argv[1:] else "", main)()
finally:
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
