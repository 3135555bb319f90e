"""One session, five languages: a login from Python, continued from Go, Node, the shell
(httpdnsctl curl) and C (libhttpdns with libcurl, the README's ipdirect.c), against the
fixture's origins; a second uid sees none of it; after the host moves (and the cache is
flushed) every client follows it with the session intact.

Run by .ci/test in the fixture's network namespace with HTTPDNS_FIXTURE, HTTPDNSD_SOCKET,
HTTPDNSCTL (the built httpdnsctl) and HTTPDNS_LIB (the built libhttpdns.so); the Go program and
the Node package are built here (go build, npm pack), and the Python client is the installed one.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import urllib.parse

import pytest

import httpdns
import httpdns.requests

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OTHER_UID = 65534


@pytest.fixture(scope="module")
def world():
    path, socket = os.environ.get("HTTPDNS_FIXTURE"), os.environ.get("HTTPDNSD_SOCKET")
    if not path or not socket:
        pytest.skip("needs HTTPDNS_FIXTURE and HTTPDNSD_SOCKET (.ci/test)")
    with open(path) as f:
        world = json.load(f)
    world["socket"] = socket
    return world


@pytest.fixture(scope="module")
def build():
    return tempfile.mkdtemp(prefix="one-session-")


def url(world, host, path, scheme="https"):
    return f"{scheme}://{host}:{world['httpsPort' if scheme == 'https' else 'httpPort']}{path}"


def records_with(world, token):
    with open(world["records"]) as f:
        return [r for r in map(json.loads, filter(None, f.read().split("\n"))) if token in r["path"]]


def run(arguments, **kwargs):
    result = subprocess.run(arguments, capture_output=True, text=True, timeout=120, **kwargs)
    assert result.returncode == 0, f"{arguments[0]} exited {result.returncode}: {result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def go_fetch(build):
    binary = os.path.join(build, "httpdns-fetch")
    env = dict(os.environ, GOPROXY="off", GOFLAGS="-mod=mod", GOCACHE=os.path.join(build, "gocache"))
    run(["go", "build", "-o", binary, "./cmd/httpdns-fetch"], cwd=os.path.join(ROOT, "clients/go"), env=env)
    return lambda world, target: [binary, "-socket", world["socket"], "-cacert", world["ca"], target]


@pytest.fixture(scope="module")
def node_fetch(build):
    project = os.path.join(build, "node")
    os.makedirs(project)
    env = dict(os.environ, npm_config_cache=os.path.join(build, "npm-cache"), npm_config_offline="true",
               npm_config_audit="false", npm_config_fund="false", npm_config_update_notifier="false")
    tarball = run(["npm", "pack", "--pack-destination", build, os.path.join(ROOT, "clients/node")],
                  env=env).strip().split("\n")[-1]
    with open(os.path.join(project, "package.json"), "w") as f:
        f.write('{"name": "consumer", "private": true}')
    run(["npm", "install", "--no-save", os.path.join(build, tarball)], cwd=project, env=env)
    shutil.copy(os.path.join(ROOT, "clients/node/examples/fetch.mjs"), project)
    return lambda world, target: ["node", os.path.join(project, "fetch.mjs"), "--cacert", world["ca"], target]


@pytest.fixture(scope="module")
def c_fetch(build):
    """The README's ipdirect.c, as written, against libhttpdns.so and libcurl."""
    library = os.environ.get("HTTPDNS_LIB") or os.path.join(ROOT, ".build/release/libhttpdns.so")
    if not os.path.exists(library):
        pytest.skip("needs HTTPDNS_LIB (swift build -c release --product httpdns)")
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    # The README's C block that starts with the program's own comment line.
    source = re.search(r"```c\n(/\* ipdirect\.c:.*?)```", readme, re.S).group(1)
    with open(os.path.join(build, "ipdirect.c"), "w") as f:
        f.write(source)
    for name in ("libhttpdns.so", "libhttpdns.so.0"):
        os.symlink(os.path.realpath(library), os.path.join(build, name))
    binary = os.path.join(build, "ipdirect")
    curl = run(["pkg-config", "--cflags", "--libs", "libcurl"]).split()
    run(["gcc", "-Wall", "-Werror", "-I", os.path.join(ROOT, "Sources/HTTPDNSClientC/include"),
         os.path.join(build, "ipdirect.c"), "-L", build, "-lhttpdns", f"-Wl,-rpath,{build}", *curl, "-o", binary])
    return lambda world, target: ([binary, target], {"HTTPDNSD_SOCKET": world["socket"],
                                                     "CURL_CA_BUNDLE": world["ca"]})


def shell_fetch(world, target):
    ctl = os.environ.get("HTTPDNSCTL") or os.path.join(ROOT, ".build/debug/httpdnsctl")
    return [ctl, "--socket", world["socket"], "curl", "-sSf", "--cacert", world["ca"], target]


def fetch_from_every_language(world, go_fetch, node_fetch, c_fetch, token):
    """Each of Go, Node, the shell and C fetches its own path on the app host."""
    environment = {key: value for key, value in os.environ.items() if not key.lower().endswith("_proxy")}
    for language, command in (("go", go_fetch), ("node", node_fetch), ("shell", shell_fetch)):
        echo = json.loads(run(command(world, url(world, "app.example.test", f"{token}/{language}/echo")),
                              env=environment))
        assert echo["path"].startswith(f"{token}/{language}/")
    arguments, extra = c_fetch(world, url(world, "app.example.test", f"{token}/c/echo"))
    json.loads(run(arguments, env=dict(environment, **extra)))
    return {record["path"].split("/")[2].split("?")[0]: record for record in records_with(world, token)}


def as_other_user(world, build, code):
    """Runs Python ``code`` as uid 65534 (Debian's python3 and requests) with a copy of the
    installed httpdns package."""
    package = os.path.join(build, "other-user")
    if not os.path.exists(package):
        shutil.copytree(os.path.dirname(httpdns.__file__), os.path.join(package, "httpdns"))
        for directory, _, files in os.walk(build):
            os.chmod(directory, 0o755)
            for name in files:
                os.chmod(os.path.join(directory, name), 0o755)
        # Let that uid reach the daemon's socket and the CA (the test's own directories).
        for path in (os.path.dirname(world["socket"]), os.path.dirname(os.path.dirname(world["socket"])),
                     world["dir"], os.path.dirname(world["dir"])):
            os.chmod(path, os.stat(path).st_mode | stat.S_IXOTH | stat.S_IROTH)
        os.chmod(world["socket"], 0o666)
        os.chmod(world["ca"], 0o644)
    result = subprocess.run(
        ["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups", "/usr/bin/python3", "-c", code],
        capture_output=True, text=True, timeout=60, cwd="/",
        env={"PYTHONPATH": package, "HTTPDNSD_SOCKET": world["socket"], "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_one_session_five_languages(world, build, go_fetch, node_fetch, c_fetch):
    with httpdns.Client(world["socket"]) as daemon:
        daemon.delete_cookies(all=True)

        # Python logs in: POST to the login host, 302 to the app host with a Domain cookie.
        token = "/five-" + os.urandom(4).hex()
        home = url(world, "app.example.test", f"{token}/python/echo")
        login = url(world, "login.example.test",
                    f"{token}/login?domain=example.test&next={urllib.parse.quote(home, safe='')}")
        with httpdns.requests.Session(daemon) as session:
            session.trust_env = False
            response = session.post(login, data={"user": "carol"}, verify=world["ca"])
        assert response.status_code == 200 and response.json()["cookie"] == "sid=carol"
        [posted] = [r for r in records_with(world, token) if "/login?" in r["path"]]
        assert (posted["server"], posted["sni"], posted["method"]) == ("127.0.0.2", "login.example.test", "POST")
        [sid] = daemon.list_cookies("example.test")
        assert (sid.name, sid.http_only, sid.host_only) == ("sid", True, False)

        # Go, Node, the shell and C continue the session, each connecting where the daemon said.
        seen = fetch_from_every_language(world, go_fetch, node_fetch, c_fetch, token)
        assert sorted(seen) == ["c", "go", "login", "node", "python", "shell"]
        for language in ("python", "go", "node", "shell", "c"):
            record = seen[language]
            assert (record["server"], record["sni"], record["host"], record["cookie"]) == (
                "127.0.0.3", "app.example.test", f"app.example.test:{world['httpsPort']}", "sid=carol"), language

        # A second uid sees none of it, neither in the jar nor on the wire.
        other_token = token + "-other"
        seen_by_other = as_other_user(world, build, f"""
import json, httpdns, httpdns.requests
client = httpdns.Client()
session = httpdns.requests.Session(client)
session.trust_env = False
echo = session.get({url(world, "app.example.test", other_token + "/echo")!r}, verify={world["ca"]!r}).json()
print(json.dumps({{"cookies": len(client.list_cookies()), "sent": echo["cookie"], "server": echo["server"]}}))
""")
        assert seen_by_other == {"cookies": 0, "sent": None, "server": "127.0.0.3"}

        # The app host moves; once the cache is flushed every client follows it, still logged in.
        answers_path = world["answers"]
        with open(answers_path) as f:
            answers = json.load(f)
        answers["app.example.test"] = ["127.0.0.6"]
        with open(answers_path + ".tmp", "w") as f:
            json.dump(answers, f)
        os.replace(answers_path + ".tmp", answers_path)
        try:
            daemon.flush_cache("app.example.test")
            moved = token + "-moved"
            with httpdns.requests.Session(daemon) as session:
                session.trust_env = False
                session.get(url(world, "app.example.test", f"{moved}/python/echo"), verify=world["ca"])
            after = fetch_from_every_language(world, go_fetch, node_fetch, c_fetch, moved)
            for language in ("python", "go", "node", "shell", "c"):
                record = after[language]
                assert (record["server"], record["sni"], record["cookie"]) == (
                    "127.0.0.6", "app.example.test", "sid=carol"), language
        finally:
            answers["app.example.test"] = ["127.0.0.3"]
            with open(answers_path + ".tmp", "w") as f:
                json.dump(answers, f)
            os.replace(answers_path + ".tmp", answers_path)
            daemon.flush_cache("app.example.test")


def test_an_ip_url_with_a_host_header_logs_in_for_every_language(world, build, go_fetch, node_fetch, c_fetch):
    """The seed's own request: Python posts to the login host's address with a Host header (as
    code migrating from an HTTPDNS SDK does); the session is the host's, so Go, Node, the shell
    and C continue it by name, and the shell by address and Host header too."""
    with httpdns.Client(world["socket"]) as daemon:
        daemon.delete_cookies(all=True)
        token = "/seed-" + os.urandom(4).hex()
        home = url(world, "app.example.test", f"{token}/python/echo")
        login = url(world, "127.0.0.2", f"{token}/login?domain=example.test&next={urllib.parse.quote(home, safe='')}")
        with httpdns.requests.Session(daemon) as session:
            session.trust_env = False
            response = session.post(login, data={"user": "dave"}, verify=world["ca"],
                                    headers={"Host": "login.example.test"})
        assert response.status_code == 200 and response.json()["cookie"] == "sid=dave"
        [posted] = [r for r in records_with(world, token) if "/login?" in r["path"]]
        assert (posted["server"], posted["sni"], posted["host"]) == (
            "127.0.0.2", "login.example.test", "login.example.test")
        [sid] = daemon.list_cookies("example.test")
        assert (sid.name, sid.domain, sid.host_only) == ("sid", "example.test", False)

        seen = fetch_from_every_language(world, go_fetch, node_fetch, c_fetch, token)
        for language in ("python", "go", "node", "shell", "c"):
            record = seen[language]
            assert (record["server"], record["sni"], record["cookie"]) == (
                "127.0.0.3", "app.example.test", "sid=dave"), language

        ctl = os.environ.get("HTTPDNSCTL") or os.path.join(ROOT, ".build/debug/httpdnsctl")
        direct = json.loads(run([ctl, "--socket", world["socket"], "curl", "-sSf", "--cacert", world["ca"],
                                 "-H", "Host: app.example.test", url(world, "127.0.0.3", f"{token}/direct/echo")]))
        assert (direct["server"], direct["sni"], direct["cookie"]) == ("127.0.0.3", "app.example.test", "sid=dave")
