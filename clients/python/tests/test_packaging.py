"""The package installs with pip's ordinary command from a read-only checkout, writing nothing
into it (as root, pip runs as another uid, for which the copy really is read-only), and its
distribution name is not the unrelated PyPI project httpdns."""

import os
import shutil
import stat
import subprocess
import tempfile

CLIENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OTHER_UID = 65534


def snapshot(tree):
    seen = {}
    for directory, directories, files in os.walk(tree):
        for name in directories + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            seen[os.path.relpath(path, tree)] = (info.st_size, info.st_mtime_ns, info.st_mode)
    return seen


def test_pip_installs_a_read_only_checkout_without_writing_into_it():
    base = tempfile.mkdtemp(prefix="httpdns-read-only-")
    source, venv, home = (os.path.join(base, name) for name in ("python", "venv", "home"))
    try:
        os.chmod(base, 0o755)
        shutil.copytree(CLIENT, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info", "dist"))
        for directory, _, files in os.walk(source):
            for path in [directory] + [os.path.join(directory, name) for name in files]:
                os.chmod(path, os.stat(path).st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) | stat.S_IROTH
                         | (stat.S_IXOTH if os.path.isdir(path) else 0))
        os.makedirs(venv)
        os.makedirs(home)
        prefix = []
        if os.geteuid() == 0:
            for path in (venv, home):
                os.chown(path, OTHER_UID, OTHER_UID)
            prefix = ["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups"]
        env = {"PATH": "/usr/bin:/bin", "HOME": home, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
        before = snapshot(source)

        def run(*arguments):
            result = subprocess.run([*prefix, *arguments], capture_output=True, text=True, timeout=300, cwd="/",
                                    env=env)
            assert result.returncode == 0, f"{arguments}: {result.stdout}{result.stderr}"
            return result.stdout

        run("/usr/bin/python3", "-m", "venv", "--system-site-packages", venv)
        # As .ci/test does: no index, no network, the build backend from the system (Debian's).
        run(os.path.join(venv, "bin", "pip"), "install", "-q", "--no-deps", "--no-index", "--no-build-isolation",
            source)
        assert snapshot(source) == before, "pip install wrote into the checkout"
        installed = run(os.path.join(venv, "bin", "python"), "-c",
                        "import importlib.metadata as m, httpdns, httpdns.requests, httpdns.httpx, httpdns.cookiejar\n"
                        "print(m.version('httpdnsd-client'), httpdns.__file__)")
        version, module = installed.split()
        assert version == "0.1.0" and module.startswith(venv + "/")
    finally:
        for directory, _, _ in os.walk(base):
            os.chmod(directory, 0o755)
        shutil.rmtree(base, ignore_errors=True)
