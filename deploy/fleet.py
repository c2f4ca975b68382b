#!/usr/bin/env python3
"""A fleet of `imagekit serve` nodes behind nginx on one machine (`make fleet`, `fleet-restart`,
`fleet-stop`, `fleet-clean`). Standard library only.

    fleet.py up --nodes 3 --port 8080 --binary .build/release/imagekit --args "--allow-unsafe"
    fleet.py restart | stop | clean | status

Layout (DIR, default .fleet):
    DIR/node-K/          node K's --cache-dir and serve.log (K = 1…N, port PORT+K)
    DIR/nginx/           nginx.conf (from deploy/nginx/imagekit-fleet.conf.template), cache, logs
    DIR/run/node-K.pid   the pid of the imagekit process listening on PORT+K
    DIR/run/nginx.pid    nginx's master
    DIR/run/fleet.env    N, FLEET_PORT, FLEET_ARGS and FLEET_BIN of the running fleet

`up` on a running fleet scales it to --nodes: it starts missing nodes (and any whose pid file
names a dead process), or takes the extra ones out of nginx and then drains them; running nodes
are never restarted. `restart` is a rolling restart, one node at a time.
"""
import argparse
import os
import pwd
import re
import grp
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "nginx", "imagekit-fleet.conf.template")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
HOST = "127.0.0.1"
PURGE_MODULE = "/usr/lib/nginx/modules/ngx_http_cache_purge_module.so"


def say(message):
    print(f"fleet: {message}", flush=True)


def fail(message):
    print(f"fleet: error: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


class Fleet:
    def __init__(self, directory):
        self.dir = os.path.abspath(directory)
        self.run_dir = os.path.join(self.dir, "run")
        self.nginx_dir = os.path.join(self.dir, "nginx")
        self.conf = os.path.join(self.nginx_dir, "nginx.conf")
        self.nginx_pid_file = os.path.join(self.run_dir, "nginx.pid")

    # MARK: saved settings

    @property
    def env_file(self):
        return os.path.join(self.run_dir, "fleet.env")

    def saved(self):
        settings = {}
        try:
            with open(self.env_file) as f:
                for line in f:
                    name, _, value = line.rstrip("\n").partition("=")
                    if name:
                        settings[name] = shlex.split(value)[0] if value else ""
        except FileNotFoundError:
            pass
        return settings

    def save(self, nodes, port, args, binary):
        os.makedirs(self.run_dir, exist_ok=True)
        with open(self.env_file, "w") as f:
            for name, value in (("N", str(nodes)), ("FLEET_PORT", str(port)), ("FLEET_ARGS", args), ("FLEET_BIN", binary)):
                f.write(f"{name}={shlex.quote(value)}\n")

    # MARK: processes

    def node_dir(self, k):
        return os.path.join(self.dir, f"node-{k}")

    def node_pid_file(self, k):
        return os.path.join(self.run_dir, f"node-{k}.pid")

    @staticmethod
    def read_pid(path):
        try:
            with open(path) as f:
                return int(f.read().strip())
        except (FileNotFoundError, ValueError):
            return None

    @staticmethod
    def alive(pid, expect=None):
        """Whether `pid` runs (not a zombie) and, with `expect`, its command line holds it."""
        if pid is None:
            return False
        try:
            os.waitpid(pid, os.WNOHANG)  # reaps it if it is a child of this process that exited
        except ChildProcessError:
            pass
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return False
            if expect is not None:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if expect.encode() not in f.read():
                        return False  # the pid was reused by another process
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return False
        return True

    def node_pid(self, k, port):
        pid = self.read_pid(self.node_pid_file(k))
        return pid if self.alive(pid, expect=f"\0{port + k}\0") else None

    def running_nodes(self, port):
        """K of every node with a pid file, alive or not."""
        found = []
        if os.path.isdir(self.run_dir):
            for name in os.listdir(self.run_dir):
                if name.startswith("node-") and name.endswith(".pid"):
                    found.append(int(name[5:-4]))
        return sorted(found)

    @staticmethod
    def healthy(port, timeout=1.0):
        try:
            with urllib.request.urlopen(f"http://{HOST}:{port}/healthz", timeout=timeout) as response:
                return response.status == 200
        except Exception:
            return False

    def start_node(self, k, port, args, binary):
        node_port = port + k
        directory = self.node_dir(k)
        os.makedirs(directory, exist_ok=True)
        os.makedirs(self.run_dir, exist_ok=True)
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((HOST, node_port))
            except OSError:
                fail(f"port {node_port} (node {k}) is taken by another process")
        command = [binary, "serve", "--host", HOST, "--port", str(node_port), "--cache-dir", directory,
                   "--backlog", "1024"] + shlex.split(args)
        if os.path.exists(PURGE_MODULE):
            # A purge on the node (with --admin-key) also drops the keys it answered from nginx's cache.
            command += ["--purge-notify", f"http://{HOST}:{port}/imagekit-purge-key"]
        log = open(os.path.join(directory, "serve.log"), "ab")
        log.write(f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} {shlex.join(command)}\n".encode())
        log.flush()
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        log.close()
        with open(self.node_pid_file(k), "w") as f:
            f.write(f"{process.pid}\n")
        return process.pid

    def wait_healthy(self, k, port, pid, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.healthy(port + k, timeout=0.5):
                return
            if not self.alive(pid):
                tail = self.log_tail(k)
                fail(f"node {k} (port {port + k}) exited while starting:\n{tail}")
            time.sleep(0.05)
        fail(f"node {k} (port {port + k}) is not healthy after {timeout} s:\n{self.log_tail(k)}")

    def log_tail(self, k, lines=15):
        try:
            with open(os.path.join(self.node_dir(k), "serve.log"), errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def stop_node(self, k, port, grace=20):
        """SIGTERM node k and wait until it has drained and exited (SIGKILL after `grace` s)."""
        pid = self.node_pid(k, port)
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + grace
            while self.alive(pid) and time.monotonic() < deadline:
                time.sleep(0.02)
            if self.alive(pid):
                say(f"node {k} did not exit within {grace} s of SIGTERM; killing it")
                os.kill(pid, signal.SIGKILL)
                while self.alive(pid):
                    time.sleep(0.02)

    # MARK: nginx

    def nginx_user_line(self):
        """When nginx starts as root its workers drop to `user`; they write the cache and temp
        directories, so those are given to that user. Debian's www-data when it can reach the
        fleet directory, else the directory's owner."""
        if os.geteuid() != 0:
            return "# (not root: nginx's workers run as the user who started it)"
        path, reachable = self.dir, True
        while True:
            mode = os.stat(path).st_mode
            if not mode & stat.S_IXOTH:
                reachable = False
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
        try:
            user = pwd.getpwnam("www-data") if reachable else None
        except KeyError:
            user = None
        if user is None:
            user = pwd.getpwuid(os.stat(self.dir).st_uid)
        group = grp.getgrgid(user.pw_gid).gr_name
        for name in ("cache", "temp"):
            top = os.path.join(self.nginx_dir, name)
            for root, dirs, files in os.walk(top):
                for entry in [root] + [os.path.join(root, d) for d in dirs] + [os.path.join(root, f) for f in files]:
                    try:
                        os.lchown(entry, user.pw_uid, user.pw_gid)
                    except FileNotFoundError:
                        pass  # a running nginx evicted or renamed it meanwhile (make fleet N=… under load)
        return f"user {user.pw_name} {group};"

    def write_nginx_conf(self, nodes, port, cache_size):
        for name in ("cache", "temp", "log"):
            os.makedirs(os.path.join(self.nginx_dir, name), exist_ok=True)
        servers = "\n".join(f"        server {HOST}:{port + k} max_fails=0;" for k in range(1, nodes + 1))
        with open(TEMPLATE) as f:
            text = f.read()
        mirrors = "\n".join(f"            mirror /imagekit-purge-node-{k};" for k in range(1, nodes + 1))
        node_locations = "\n".join(
            f"        location = /imagekit-purge-node-{k} {{ internal; proxy_pass http://{HOST}:{port + k}$request_uri; }}"
            for k in range(1, nodes + 1))
        if os.path.exists(PURGE_MODULE):
            module = f"load_module {PURGE_MODULE};"
            # Only the nodes (on this host) may ask; the key is nginx's own proxy_cache_key.
            purge_key = ("        location = /imagekit-purge-key {\n"
                         f"            allow {HOST};\n            deny all;\n"
                         "            proxy_cache_purge imagekit_results \"$http_x_imagekit_purge_key\";\n"
                         "        }")
        else:
            module = f"# {PURGE_MODULE} is not installed (libnginx-mod-http-cache-purge): no cache purge"
            purge_key = "        # no /imagekit-purge-key: the cache purge module is not installed"
        fields = {"USER_LINE": self.nginx_user_line(), "PREFIX": self.nginx_dir, "PID_FILE": self.nginx_pid_file,
                  "LISTEN": f"{HOST}:{port}", "SERVERS": servers, "CACHE_SIZE": cache_size, "WORKERS": "auto",
                  "PURGE_MODULE": module, "PURGE_MIRRORS": mirrors, "PURGE_NODES": node_locations,
                  "PURGE_KEY": purge_key}
        for name, value in fields.items():
            text = text.replace("{{" + name + "}}", value)
        if re.search(r"\{\{[A-Z_]+\}\}", text):
            fail("the nginx template has a field this script does not fill")
        with open(self.conf + ".new", "w") as f:
            f.write(text)
        self.nginx("-t", "-q", conf=self.conf + ".new")
        os.replace(self.conf + ".new", self.conf)

    def nginx(self, *args, conf=None):
        command = [NGINX, "-p", self.nginx_dir, "-e", os.path.join(self.nginx_dir, "log", "error.log"),
                   "-c", conf or self.conf, *args]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            fail(f"{shlex.join(command)} failed:\n{result.stderr.strip()}")

    def nginx_pid(self):
        pid = self.read_pid(self.nginx_pid_file)
        return pid if self.alive(pid, expect="nginx") else None

    def start_or_reload_nginx(self, port):
        if self.nginx_pid() is not None:
            self.nginx("-s", "reload")
            return "reloaded"
        self.nginx()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://{HOST}:{port}/nginx-healthz", timeout=0.5) as response:
                    if response.status == 200:
                        return "started"
            except Exception:
                time.sleep(0.05)
        fail(f"nginx did not answer on {HOST}:{port}; see {self.nginx_dir}/log/error.log")

    def stop_nginx(self):
        pid = self.nginx_pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGQUIT)  # graceful: requests in flight finish
        deadline = time.monotonic() + 20
        while self.alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if self.alive(pid):
            os.kill(pid, signal.SIGTERM)

    # MARK: commands

    def up(self, nodes, port, args, binary, cache_size):
        saved = self.saved()
        running_nginx = self.nginx_pid() is not None
        if running_nginx and saved.get("FLEET_PORT") and int(saved["FLEET_PORT"]) != port:
            fail(f"a fleet runs on port {saved['FLEET_PORT']}; `make fleet-stop` it first")
        if not os.access(binary, os.X_OK):
            fail(f"{binary} is not an executable (build it: swift build -c release --product imagekit)")
        binary = os.path.abspath(binary)
        started = []
        for k in range(1, nodes + 1):
            if self.node_pid(k, port) is None:
                started.append((k, self.start_node(k, port, args, binary)))
        for k, pid in started:
            self.wait_healthy(k, port, pid)
        extra = [k for k in self.running_nodes(port) if k > nodes]
        self.save(nodes, port, args, binary)
        self.write_nginx_conf(nodes, port, cache_size)
        verb = self.start_or_reload_nginx(port)
        if extra:
            # nginx no longer sends them new requests; let its old workers hand over what they
            # sent, then drain (in-flight requests finish) and stop.
            time.sleep(0.5)
            for k in extra:
                self.stop_node(k, port)
                os.remove(self.node_pid_file(k))
        say(f"nginx {verb} on http://{HOST}:{port} (config {self.conf})")
        for k in range(1, nodes + 1):
            state = "started" if k in dict(started) else "running"
            say(f"node {k}: http://{HOST}:{port + k} pid {self.node_pid(k, port)} ({state}; cache {self.node_dir(k)})")
        for k in extra:
            say(f"node {k}: drained and stopped (its cache stays in {self.node_dir(k)})")

    def settings(self):
        saved = self.saved()
        if not saved:
            fail(f"no fleet in {self.dir} (start one with `make fleet N=3`)")
        return int(saved["N"]), int(saved["FLEET_PORT"]), saved.get("FLEET_ARGS", ""), saved["FLEET_BIN"]

    def restart(self, cache_size):
        nodes, port, args, binary = self.settings()
        for k in range(1, nodes + 1):
            was = self.node_pid(k, port)
            if was is not None:
                started_at = time.monotonic()
                self.stop_node(k, port)
                drained = time.monotonic() - started_at
            pid = self.start_node(k, port, args, binary)
            self.wait_healthy(k, port, pid)
            if was is None:
                say(f"node {k}: was not running; started (pid {pid})")
            else:
                say(f"node {k}: drained and exited in {drained:.2f} s; restarted (pid {pid})")
        if self.nginx_pid() is None:
            self.write_nginx_conf(nodes, port, cache_size)
            self.start_or_reload_nginx(port)
            say("nginx was not running; started")

    def stop(self):
        nodes, port, _, _ = self.settings()
        self.stop_nginx()
        for k in self.running_nodes(port):
            self.stop_node(k, port)
            try:
                os.remove(self.node_pid_file(k))
            except FileNotFoundError:
                pass
        say(f"stopped nginx and the nodes; caches kept in {self.dir}")

    def clean(self):
        if self.saved():
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        say(f"removed {self.dir}")

    def status(self):
        nodes, port, args, binary = self.settings()
        say(f"nginx http://{HOST}:{port}: " + ("running" if self.nginx_pid() else "not running"))
        for k in range(1, nodes + 1):
            pid = self.node_pid(k, port)
            state = "not running" if pid is None else ("healthy" if self.healthy(port + k) else "running, not healthy")
            say(f"node {k}: http://{HOST}:{port + k} {state}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default=".fleet")
    parser.add_argument("--cache-size", default="1g", help="nginx's result cache on disk (max_size)")
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start or scale the fleet")
    up.add_argument("--nodes", default="")
    up.add_argument("--port", default="")
    up.add_argument("--args", default=None)
    up.add_argument("--binary", default=".build/release/imagekit")
    for name in ("restart", "stop", "clean", "status"):
        commands.add_parser(name)
    options = parser.parse_args()
    fleet = Fleet(options.dir)
    if options.command == "up":
        saved = fleet.saved()
        nodes = int(options.nodes or saved.get("N") or 3)
        port = int(options.port or saved.get("FLEET_PORT") or 8080)
        args = options.args if options.args is not None else saved.get("FLEET_ARGS", "")
        if nodes < 1:
            fail("N must be at least 1")
        fleet.up(nodes, port, args, options.binary, options.cache_size)
    elif options.command == "restart":
        fleet.restart(options.cache_size)
    else:
        getattr(fleet, options.command)()


if __name__ == "__main__":
    main()
