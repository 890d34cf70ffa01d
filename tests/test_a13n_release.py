# The a13n-harness release gate: harness_agui.a13n (0.5, 0.20 and 0.21) and harness_agui.compat.install() refuse
# another installed release at import, with an ImportError naming the installed version and the supported ones;
# install() puts the vocabulary of the installed release (0.5's or 0.21's) behind upstream's name, and each compat
# vocabulary refuses the other's release; a release that is installed but cannot be imported is not answered with
# "install the extra". Each case
# runs a fresh interpreter whose path starts with a folder holding only an a13n-harness distribution's metadata of
# the version under test (no a13n_harness package: what is checked is the metadata, read before any import).

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness_agui._a13n_release import unsupported_message

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, version: str | None, code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that sees a13n-harness ``version`` installed (none for None)."""
    fake = tmp_path / "site"
    fake.mkdir()
    if version is not None:
        meta = fake / f"a13n_harness-{version}.dist-info"
        meta.mkdir()
        (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: a13n-harness\nVersion: {version}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), str(ROOT)])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)


def _has_real_a13n_harness() -> bool:
    import importlib.util

    return importlib.util.find_spec("a13n_harness") is not None


@pytest.mark.parametrize("version", ["0.19.2", "0.4.9", "0.22.0", "1.0.0", "0.6.0"])
def test_the_adapter_refuses_an_unsupported_release_at_import_naming_both(tmp_path: Path, version: str) -> None:
    done = _run(tmp_path, version, """
        try:
            import harness_agui.a13n
        except ImportError as e:
            print("refused:", e)
        else:
            print("imported")
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused:"), done.stdout
    assert f"a13n-harness {version} is installed" in done.stdout
    assert "supports a13n-harness 0.5.x, 0.20.x or 0.21.x" in done.stdout


@pytest.mark.parametrize("version", ["0.19.0", "0.22.1", "0.4.2"])
def test_install_refuses_a_release_neither_vocabulary_reads_and_registers_nothing(tmp_path: Path,
                                                                                  version: str) -> None:
    done = _run(tmp_path, version, """
        import sys
        import harness_agui.compat as compat
        try:
            compat.install()
        except ImportError as e:
            print("refused:", e)
        print("registered:", sorted(m for m in sys.modules if m.startswith("a13n_stream_protocol")))
    """)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("refused: harness_agui.compat.install() supports a13n-harness 0.5.x, 0.20.x or "
                               f"0.21.x, but a13n-harness {version} is installed"), done.stdout
    assert lines[1] == "registered: []"


@pytest.mark.parametrize(("version", "vocabulary"), [("0.5.4", "0.5.4"), ("0.20.1", "0.21.0"), ("0.21.0", "0.21.0")])
def test_install_puts_the_vocabulary_of_the_installed_release_behind_upstreams_name(
        tmp_path: Path, version: str, vocabulary: str) -> None:
    done = _run(tmp_path, version, """
        import harness_agui.compat as compat
        compat.install()
        import a13n_stream_protocol, a13n_stream_protocol.observer
        print(a13n_stream_protocol.__version__, a13n_stream_protocol.observer.__name__, compat.installed())
    """)
    assert done.returncode == 0, done.stderr
    package = "a13n_stream_protocol_05" if vocabulary == "0.5.4" else "a13n_stream_protocol"
    assert done.stdout.split() == [vocabulary, f"harness_agui.compat.{package}.observer", "True"]


@pytest.mark.parametrize(("version", "package", "supported"), [
    ("0.5.4", "a13n_stream_protocol", "0.20.x or 0.21.x"),
    ("0.21.0", "a13n_stream_protocol_05", "0.5.x"),
    ("0.20.1", "a13n_stream_protocol_05", "0.5.x"),
])
def test_a_compat_vocabulary_refuses_the_other_release(tmp_path: Path, version: str, package: str,
                                                       supported: str) -> None:
    # The 0.5 package at import; the 0.21 one (whose modules the 0.5 package shares) when an observer is made.
    done = _run(tmp_path, version, f"""
        try:
            from harness_agui.compat.{package} import observer
            observer.HarnessAguiObserver()
        except ImportError as e:
            print("refused:", e)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused: harness_agui.compat."), done.stdout
    assert f"supports a13n-harness {supported}, but a13n-harness {version} is installed" in done.stdout


@pytest.mark.skipif(_has_real_a13n_harness(), reason="a real a13n_harness would be imported")
@pytest.mark.parametrize("version", ["0.5.4", "0.20.1", "0.21.0"])
def test_a_supported_release_that_cannot_be_imported_is_reported_as_such_not_as_a_missing_extra(
        tmp_path: Path, version: str) -> None:
    done = _run(tmp_path, version, """
        from harness_agui.a13n import from_a13n
        try:
            from_a13n(object())
        except ImportError as e:
            print("failed:", e)
    """)
    assert done.returncode == 0, done.stderr
    series = ".".join(version.split(".")[:2])
    assert done.stdout.startswith(f"failed: harness_agui.a13n: a13n-harness {series} is installed but"), done.stdout
    assert "pip install" not in done.stdout


@pytest.mark.skipif(_has_real_a13n_harness(), reason="a real a13n_harness would be imported")
def test_without_a13n_harness_the_adapter_imports_and_names_both_extras_on_use(tmp_path: Path) -> None:
    done = _run(tmp_path, None, """
        from harness_agui.a13n import from_a13n
        try:
            from_a13n(object())
        except ImportError as e:
            print("failed:", e)
    """)
    assert done.returncode == 0, done.stderr
    assert "'harness-agui[a13n]'" in done.stdout and "'harness-agui[a13n05]'" in done.stdout, done.stdout


def test_the_refusal_names_the_extra_of_each_supported_series() -> None:
    message = unsupported_message("m", "0.19.0", ((0, 5), (0, 21)))
    assert message == ("m supports a13n-harness 0.5.x or 0.21.x, but a13n-harness 0.19.0 is installed; install a "
                       "supported release (pip install 'harness-agui[a13n05]' (a13n-harness 0.5.x) or "
                       "'harness-agui[a13n]' (a13n-harness 0.21.x))")
    assert unsupported_message("m", "0.3", ((0, 20), (0, 21))).endswith(
        "(pip install 'harness-agui[a13n]' (a13n-harness 0.20.x, 0.21.x))")
