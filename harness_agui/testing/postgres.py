# A throwaway PostgreSQL server for tests, benchmarks and demos (standard library only;
# ``harness_agui.host.postgres`` serves its old name for one release): ``initdb``
# into a fresh temporary directory, a server that listens on a Unix socket in
# that directory only (no TCP port unless asked), and everything removed on
# ``stop()``. Nothing assumes a server already running.
#
# The server binaries (``initdb``, ``pg_ctl``) are looked up in
# ``$HARNESS_AGUI_PG_BIN``, then on ``PATH``, then in the usual Debian place
# (``/usr/lib/postgresql/<version>/bin``). When none is found, ``start()``
# raises ``PostgresNotFoundError`` saying where it looked: a test suite that
# needs the server fails with that message instead of skipping in silence.
#
# PostgreSQL refuses to run as root. When this process is root (a CI runner,
# a container), the server runs as the ``postgres`` user if the machine has
# one (else ``nobody``): the temporary directory is handed to that user, and
# clients connect over the socket as the database superuser ``harness``
# (``trust`` authentication, which the socket's directory confines to this
# machine). The server is tuned for throwaway data (``fsync=off``): a crash
# of the machine may lose it, which is what a test database is for.

from __future__ import annotations

import atexit
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import urllib.parse
from collections.abc import Sequence

from ..core.errors import HarnessAguiError

__all__ = ["PostgresNotFoundError", "TemporaryPostgres", "find_postgres_bin"]

SUPERUSER = "harness"


class PostgresNotFoundError(HarnessAguiError, RuntimeError):
    """The PostgreSQL server binaries (initdb, pg_ctl) are not on this machine."""


def find_postgres_bin() -> str:
    """The directory holding ``initdb`` and ``pg_ctl``; PostgresNotFoundError naming where it looked."""
    looked: list[str] = []
    env = os.environ.get("HARNESS_AGUI_PG_BIN")
    candidates: list[str] = []
    if env:
        candidates.append(env)
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(os.path.dirname(os.path.realpath(on_path)))
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for directory in candidates:
        looked.append(directory)
        if all(os.access(os.path.join(directory, name), os.X_OK) for name in ("initdb", "pg_ctl", "postgres")):
            return directory
    raise PostgresNotFoundError(
        "the PostgreSQL server binaries (initdb, pg_ctl, postgres) were not found (looked in "
        f"$HARNESS_AGUI_PG_BIN, on PATH and in /usr/lib/postgresql/*/bin: {looked or 'nothing there'}); "
        "install PostgreSQL 15 or later (Debian: apt-get install postgresql) or set HARNESS_AGUI_PG_BIN")


def _server_user() -> pwd.struct_passwd | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise PostgresNotFoundError("running as root, and there is neither a postgres nor a nobody user to run the "
                                "PostgreSQL server as (it refuses to run as root)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class TemporaryPostgres:
    """A PostgreSQL server in a temporary directory, for tests and benchmarks.

    ``start()`` runs ``initdb`` and starts the server; ``url`` is then a
    ``postgresql://`` URL of its ``harness`` database; ``stop()`` stops it
    (immediately: the data is thrown away) and removes the directory. With
    ``tcp=True`` the server also listens on 127.0.0.1 at a free port (only
    there); otherwise only on a Unix socket in its directory. ``settings``
    are extra ``-c name=value`` server settings. Usable as a context manager.

    ``start()`` raises ``PostgresNotFoundError`` when the binaries are
    missing, and ``subprocess.CalledProcessError`` (with the server log in
    the message) when initdb or the start fails.
    """

    def __init__(self, *, tcp: bool = False, max_connections: int = 200,
                 settings: Sequence[tuple[str, str]] = ()) -> None:
        self.tcp = tcp
        self.max_connections = max_connections
        self.settings = tuple(settings)
        self.directory: str | None = None
        self.port = 5432
        self._bin: str | None = None
        self._user: pwd.struct_passwd | None = None
        self._running = False

    @property
    def url(self) -> str:
        """The URL of the ``harness`` database (the server must be started)."""
        return self.url_of("harness")

    def url_of(self, database: str) -> str:
        """The URL of another database on this server (see ``create_database``)."""
        if self.directory is None:
            raise RuntimeError("the server is not started")
        if self.tcp:
            return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"
        host = urllib.parse.quote(self._socket_dir, safe="")
        return f"postgresql://{SUPERUSER}@/{database}?host={host}&port={self.port}"

    @property
    def _socket_dir(self) -> str:
        assert self.directory is not None
        return self.directory

    @property
    def _data(self) -> str:
        assert self.directory is not None
        return os.path.join(self.directory, "data")

    def _run(self, args: list[str], what: str) -> None:
        user = self._user
        result = subprocess.run(args, capture_output=True, text=True, cwd=self.directory,
                                user=None if user is None else user.pw_uid,
                                group=None if user is None else user.pw_gid,
                                extra_groups=None if user is None else [],
                                env={**os.environ, "LC_ALL": "C"})
        if result.returncode != 0:
            log = ""
            logfile = os.path.join(self._socket_dir, "server.log")
            if os.path.exists(logfile):
                with open(logfile, errors="replace") as f:
                    log = f.read()[-4000:]
            raise subprocess.CalledProcessError(
                result.returncode, args,
                output=f"{what} failed:\n{result.stdout}\n{result.stderr}\n{log}", stderr=result.stderr)

    def start(self) -> TemporaryPostgres:
        """initdb and start the server; returns self. Raises as the class says."""
        if self._running:
            return self
        self._bin = find_postgres_bin()
        self._user = _server_user()
        self.directory = tempfile.mkdtemp(prefix="harness-agui-pg-")
        if self._user is not None:
            os.chown(self.directory, self._user.pw_uid, self._user.pw_gid)
        os.chmod(self.directory, 0o700)
        if self.tcp:
            self.port = _free_port()
        try:
            self._run([os.path.join(self._bin, "initdb"), "-D", self._data, "-U", SUPERUSER, "--auth=trust",
                       "--encoding=UTF8", "--locale=C", "--no-sync"], "initdb")
            self._pg_ctl("start", "starting the server")
            self._running = True
            atexit.register(self.stop)
            self.create_database("harness")
        except BaseException:
            self.stop()
            raise
        return self

    def _pg_ctl(self, action: str, what: str, *extra: str) -> None:
        assert self._bin is not None
        options = [
            f"-c listen_addresses='{'127.0.0.1' if self.tcp else ''}'",
            f"-c unix_socket_directories='{self._socket_dir}'",
            f"-c port={self.port}",
            f"-c max_connections={self.max_connections}",
            "-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off",
            *(f"-c {name}={value}" for name, value in self.settings),
        ]
        self._run([os.path.join(self._bin, "pg_ctl"), "-D", self._data, "-l",
                   os.path.join(self._socket_dir, "server.log"), "-w", "-t", "60", "-o", " ".join(options),
                   *extra, action], what)

    def restart(self) -> None:
        """Stop the server at once (every session ends, as in a crash of the server) and start it again on
        the same socket and port with the same data. For fault tests. Raises as ``start()`` does."""
        if not self._running:
            raise RuntimeError("the server is not started")
        self._pg_ctl("restart", "restarting the server", "-m", "immediate")

    def create_database(self, name: str) -> str:
        """Create database ``name`` (an identifier of letters, digits and _) and return its URL."""
        if not name.replace("_", "").isalnum() or not name.isascii():
            raise ValueError(f"a database name of letters, digits and _, not {name!r}")
        import psycopg

        with psycopg.connect(self.url_of("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url_of(name)

    def stop(self) -> None:
        """Stop the server at once and remove its directory. Harmless when not started or stopped twice."""
        if self.directory is None:
            return
        if self._running and self._bin is not None:
            self._running = False
            try:
                self._run([os.path.join(self._bin, "pg_ctl"), "-D", self._data, "-m", "immediate", "-w", "stop"],
                          "stopping the server")
            except subprocess.CalledProcessError:
                pass
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory = None
        atexit.unregister(self.stop)

    def __enter__(self) -> TemporaryPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
