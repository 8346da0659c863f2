"""`bench.py proxy`: the outbound proxy against nginx `proxy_pass` to the same upstream, in the
same run. The upstream is an nginx serving a small JSON file and a large file; one broker
forwards a session's calls to it (adding the session's Bearer token), and a second nginx does the
same with `proxy_pass` (HTTP/1.1, kept-alive upstream connections, the same Authorization header
set). wrk measures requests/s, p99 and each proxy's CPU a request in interleaved rounds; curl
downloads the large file through each, and the broker's resident memory is sampled meanwhile.
Figures go into bench/results.json."""
import json, os, pathlib, statistics, subprocess, tempfile, threading, time

# The helpers of the script that runs this one (bench.py as __main__: one list of processes to stop).
import __main__ as b

LARGE_MB = int(os.environ.get("BENCH_PROXY_LARGE_MB", "512"))


def nginx(work, name, http_block, workers):
    """Starts an nginx of its own (its own master, so that its workers' CPU is its own)."""
    conf = work / f"{name}.conf"
    (work / f"logs-{name}").mkdir()
    conf.write_text(f"""worker_processes {workers}; pid {work}/{name}.pid; error_log {work}/logs-{name}/error.log;
events {{ worker_connections 4096; }}
http {{ access_log off; {http_block} }}
""")
    subprocess.run(["nginx", "-c", str(conf), "-p", str(work)], check=True, capture_output=True)
    return work / f"{name}.pid"


def download(url, headers, pid=None):
    """Seconds to fetch `url` to /dev/null, and with `pid` that process's largest RSS meanwhile (MB)."""
    peak = [b.rss_mb(pid) if pid else 0.0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], b.rss_mb(pid))
            time.sleep(0.02)
    sampler = threading.Thread(target=sample) if pid else None
    if sampler:
        sampler.start()
    args = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{size_download} %{time_total}"]
    for h in headers:
        args += ["-H", h]
    out = subprocess.run(args + [url], capture_output=True, text=True, check=True).stdout.split()
    done.set()
    if sampler:
        sampler.join()
    assert out[0] == "200" and int(out[1]) == LARGE_MB << 20, out
    return float(out[2]), peak[0]


def proxy_bench(env, op, idp):
    work = pathlib.Path(tempfile.mkdtemp(prefix="tokenbroker-proxy-bench-"))
    work.chmod(0o755)
    api = work / "api"
    api.mkdir()
    api.chmod(0o755)
    item = {"id": 7, "name": "Widget", "tags": ["a", "b", "c"], "owner": {"id": 42, "login": "octo"}, "updated_at": "2026-12-06T12:00:00Z",
            "description": "x" * 120}
    (api / "item.json").write_text(json.dumps(item))
    with open(api / "large.bin", "wb") as f:   # written, not sparse: nginx reads it from the page cache
        chunk = os.urandom(1 << 20)
        for _ in range(LARGE_MB):
            f.write(chunk)
    for p in api.iterdir():
        p.chmod(0o644)
    up_port, ngx_proxy_port, broker_port = b.free_port(), b.free_port(), b.free_port()
    nginx(work, "upstream", f"server {{ listen 127.0.0.1:{up_port}; keepalive_requests 100000; root {work};"
                            " location / { default_type application/json; } }", workers=1)
    token = "bench-" + "t" * 40
    nginx(work, "proxy", f"upstream api {{ server 127.0.0.1:{up_port}; keepalive 128; }}"
                         f" server {{ listen 127.0.0.1:{ngx_proxy_port}; keepalive_requests 100000;"
                         f" location / {{ proxy_pass http://api/api/; proxy_http_version 1.1; proxy_set_header Connection \"\";"
                         f" proxy_set_header Authorization \"Bearer {token}\"; proxy_buffering on; }} }}", workers=2)
    broker = f"http://127.0.0.1:{broker_port}"
    served = b.start([b.BIN / "tokenbroker", "serve"], {**env, "TOKENBROKER_ACCESS_LOG": "false", "TOKENBROKER_LISTEN": f"127.0.0.1:{broker_port}"},
                     open(work / "broker.log", "w"))
    b.wait_ready(broker + "/healthz")
    b.http("PUT", broker + "/v1/tenants/pb", op, {"name": "Proxy bench"})
    status, _, body = b.http("PUT", broker + "/v1/tenants/pb/clients/api", op, {
        "protocol": "oauth2", "client_id": "bench-api", "auth_method": "client_secret_basic", "client_secret": "s",
        "redirect_uri": broker + "/v1/callback", "scopes": ["read"],
        "descriptor": {"endpoints": {"authorization": idp + "/authorize", "token": idp + "/token"}, "grant": {"refresh_token": "reusable"}},
        "upstream": {"base_url": f"http://127.0.0.1:{up_port}/api", "allow_private_addresses": True}})
    assert status in (200, 201), body
    key = json.loads(b.http("POST", broker + "/v1/apikeys", op, {"name": "p", "roles": ["proxy", "admin"], "tenants": ["pb"]})[2])["key"]
    exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 7200))
    status, _, imported = b.http("POST", broker + "/v1/tenants/pb/sessions:import", key, {
        "client": "api", "subject": "u1", "refresh_token": "r" * 40, "access_token": token, "expires_at": exp})
    assert status == 201, imported
    sid = json.loads(imported)["session_id"]
    via_broker = f"{broker}/v1/tenants/pb/proxy/sessions/{sid}/"
    via_nginx = f"http://127.0.0.1:{ngx_proxy_port}/"
    status, _, sample = b.http("GET", via_broker + "item.json", key)
    assert status == 200 and json.loads(sample) == item, sample
    assert b.http("GET", via_nginx + "item.json")[0] == 200
    script = work / "proxy.lua"
    script.write_text(f'wrk.headers["Authorization"] = "Bearer {key}"\n')
    plain = work / "plain.lua"
    plain.write_text("")
    ngx_workers = b.children(int((work / "proxy.pid").read_text()))
    b.wrk(via_broker + "item.json", str(script))   # warm-up
    if os.environ.get("BENCH_PROXY_PERF"):   # a profile of the broker under this load, then stop
        perf = subprocess.Popen(["perf", "record", "-F", "999", "-g", "-p", str(served.pid), "-o", os.environ["BENCH_PROXY_PERF"]])
        b.wrk(via_broker + "item.json", str(script))
        perf.send_signal(2)
        perf.wait()
        return {}
    rounds = []
    for _ in range(b.ROUNDS):
        t = b.wrk(via_broker + "item.json", str(script), [served.pid])
        n = b.wrk(via_nginx + "item.json", str(plain), ngx_workers)
        rounds.append((t, n))
        print(f"round: proxy {t[0]:.0f} req/s p99 {t[1]:.2f} ms {t[2]:.1f} µs CPU | nginx proxy_pass {n[0]:.0f} req/s p99 {n[1]:.2f} ms"
              f" {n[2]:.1f} µs CPU | ratio {t[0] / n[0]:.3f}", flush=True)
    ratios = [t[0] / n[0] for t, n in rounds]
    large = []
    base_rss = b.rss_mb(served.pid)
    for _ in range(b.ROUNDS):
        bt, peak = download(via_broker + "large.bin", [f"Authorization: Bearer {key}"], served.pid)
        nt, _ = download(via_nginx + "large.bin", [])
        large.append((bt, nt, peak))
        print(f"large: proxy {LARGE_MB / bt:.0f} MB/s (peak RSS {peak:.1f} MB) | nginx proxy_pass {LARGE_MB / nt:.0f} MB/s | ratio {nt / bt:.3f}", flush=True)
    hwm = next(int(l.split()[1]) for l in pathlib.Path(f"/proc/{served.pid}/status").read_text().splitlines() if l.startswith("VmHWM:")) / 1024
    served.terminate()
    served.wait()
    for name in ("upstream", "proxy"):
        subprocess.run(["nginx", "-c", str(work / f"{name}.conf"), "-p", str(work), "-s", "stop"], capture_output=True)
    med = statistics.median
    return {
        "proxy_rps": round(med(t[0] for t, _ in rounds)), "nginx_proxy_pass_rps": round(med(n[0] for _, n in rounds)),
        "proxy_vs_nginx_proxy_pass": round(med(ratios), 3), "proxy_vs_nginx_proxy_pass_rounds": [round(r, 3) for r in ratios],
        "proxy_p99_ms": round(med(t[1] for t, _ in rounds), 2), "nginx_proxy_pass_p99_ms": round(med(n[1] for _, n in rounds), 2),
        "proxy_cpu_us_per_request": round(med(t[2] for t, _ in rounds), 1),
        "nginx_proxy_pass_cpu_us_per_request": round(med(n[2] for _, n in rounds), 1),
        "proxy_large_mb": LARGE_MB,
        "proxy_large_mb_per_s": round(med(LARGE_MB / bt for bt, _, _ in large)),
        "nginx_proxy_pass_large_mb_per_s": round(med(LARGE_MB / nt for _, nt, _ in large)),
        "proxy_large_vs_nginx_proxy_pass": round(med(nt / bt for bt, nt, _ in large), 3),
        "proxy_large_rss_growth_mb": round(max(p for _, _, p in large) - base_rss, 1),
        "proxy_peak_rss_mb": round(hwm, 1),
    }


def proxy_only():
    """Runs the proxy benchmark alone; its figures are merged into bench/results.json."""
    r = proxy_bench(*b.standalone())
    r["proxy_date"] = time.strftime("%Y-%m-%d")
    print(json.dumps(r, indent=2))
    previous = json.loads(b.OUT.read_text()) if b.OUT.exists() else {}
    previous.update(r)
    b.OUT.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")
