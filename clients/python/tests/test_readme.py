"""The README's Python example, extracted as written, with api.example.com replaced by the
fixture's app.example.test (the only substitution): it prints the session cookie, and fails
with a one-line message (no traceback) when the name is unknown or the daemon is not there."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def example():
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    match = re.search(r"<!-- example: covered by clients/python/tests/test_readme.py[^\n]*-->\n```python\n(.*?)```", readme, re.S)
    assert match, "the README lost its Python example"
    return match.group(1)


def run(code, socket):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, HTTPDNSD_SOCKET=socket))


def test_the_readme_example_prints_the_session_cookie(world, daemon):
    daemon.delete_cookies(all=True)
    daemon.handle_set_cookie("https://app.example.test/", "sid=readme; Path=/; Secure; HttpOnly")
    result = run(example().replace("api.example.com", "app.example.test"), world.socket)
    assert (result.returncode, result.stdout, result.stderr) == (0, "Cookie: sid=readme\n", "")


def test_the_readme_example_reports_errors_without_a_traceback(world, tmp_path):
    unknown = run(example().replace("api.example.com", "nowhere.example.test"), world.socket)
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr.startswith("httpdnsd: Host not found") and "(HostNotFound)" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    absent = run(example(), str(tmp_path / "no-daemon.sock"))
    assert absent.returncode == 1 and absent.stderr.startswith("httpdnsd: cannot connect")
    assert "Traceback" not in absent.stderr
