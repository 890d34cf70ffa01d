# harness_agui.compat.install() and its pytest plugin: a Host's `import a13n_stream_protocol` gets the compat
# package. Each case runs in a fresh interpreter, since installing changes sys.modules for the whole process.

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")


def run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120)


def test_after_install_every_upstream_module_name_imports_the_compat_module() -> None:
    done = run("""
        from harness_agui.compat import install, installed
        install(); install()
        import a13n_stream_protocol
        from a13n_stream_protocol import CustomEventAssembler, tool_result_content
        from a13n_stream_protocol.display import DisplayFold
        import a13n_stream_protocol.fragments, a13n_stream_protocol.memory, a13n_stream_protocol.messages
        assert installed()
        assert a13n_stream_protocol.__name__ == "harness_agui.compat.a13n_stream_protocol"
        assert DisplayFold.__module__ == "harness_agui.compat.a13n_stream_protocol.display"
        assert a13n_stream_protocol.fragments.fragment_custom_event is a13n_stream_protocol.fragment_custom_event
        assert issubclass(a13n_stream_protocol.AguiObservationError, ValueError)
        print("ok")
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_install_after_the_real_package_was_imported_is_refused() -> None:
    done = run("""
        import a13n_stream_protocol
        from harness_agui.compat import install
        install()
    """)
    assert done.returncode == 1 and "RuntimeError" in done.stderr and "before the Host imports it" in done.stderr


def test_the_observer_classes_behind_upstreams_name_are_the_compat_packages() -> None:
    done = run("""
        from harness_agui.compat import install
        install()
        from a13n_stream_protocol import AguiEventProcessor, HarnessAguiObserver, HarnessAguiStreamObserver
        from a13n_stream_protocol.observer import ObserverContinuation
        assert HarnessAguiStreamObserver.__module__ == "harness_agui.compat.a13n_stream_protocol.observer"
        assert issubclass(HarnessAguiStreamObserver, HarnessAguiObserver)
        assert ObserverContinuation().model_dump(mode="json") == {
            "thread_id": None, "run_id": None,
            "state": {"request_index": 0, "parts": {}, "children": {}, "threads": {}}}
        print("ok")
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_the_pytest_plugin_installs_before_test_modules_import(tmp_path) -> None:
    (tmp_path / "test_host.py").write_text(textwrap.dedent("""
        import a13n_stream_protocol.display

        def test_it_is_the_compat_package():
            assert a13n_stream_protocol.display.__name__.startswith("harness_agui.compat.")
    """))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "harness_agui.compat.pytest_plugin",
                           "-p", "no:cacheprovider", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
