"""The debugging notebook (examples/debug_a_run.ipynb) runs headless, top to
bottom, without an error, and shows what it promises.

The kernel is this interpreter: the test writes a "python3" kernel spec whose
argv starts with ``sys.executable`` into a temporary folder and gives the
kernel manager only that folder, so a kernel spec installed elsewhere on the
machine (or none at all) cannot change which Python runs the notebook.
IPython and Jupyter keep their runtime files in the temporary folder too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "debug_a_run.ipynb"


def _kernel_manager(folder: Path) -> AsyncKernelManager:
    spec = folder / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (harness-agui tests)",
        "language": "python",
    }), encoding="utf-8")
    specs = KernelSpecManager(kernel_dirs=[str(folder / "kernels")], ensure_native_kernel=False)
    return AsyncKernelManager(kernel_name="python3", kernel_spec_manager=specs)


def _outputs(cell: Any) -> tuple[str, str]:
    """(plain text, html) of everything a code cell displayed or printed."""
    text, html = [], []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            text.append(out["text"])
        data = out.get("data", {})
        text.append(data.get("text/plain", ""))
        html.append(data.get("text/html", ""))
    return "".join(text), "".join(html)


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("jupyter")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("IPYTHONDIR", str(folder / "ipython"))
        env.setenv("JUPYTER_RUNTIME_DIR", str(folder / "runtime"))
        env.setenv("JUPYTER_PLATFORM_DIRS", "1")
        km = _kernel_manager(folder)
        nb = nbformat.read(NOTEBOOK, as_version=4)
        client = NotebookClient(nb, km=km, kernel_name="python3", timeout=300,
                                resources={"metadata": {"path": str(NOTEBOOK.parent)}})
        # Raises CellExecutionError for a cell that errors; the kernel is shut down either way.
        client.execute(cleanup_kc=True)
    return [c for c in nb.cells if c.cell_type == "code"]


def test_the_notebook_is_stored_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")


def test_every_cell_of_the_notebook_runs_without_an_error(executed: Any) -> None:
    assert executed
    for cell in executed:
        assert cell.execution_count is not None
        assert all(out["output_type"] != "error" for out in cell.outputs), cell.source


def test_the_notebook_shows_the_run_as_a_conversation(executed: Any) -> None:
    text, html = _outputs(executed[1])
    assert 'class="hagui"' in html
    for expected in ("Narita Express", "tool call", "result: failed", "run finished: success"):
        assert expected in html, expected


def test_the_notebook_steps_to_a_tool_call_and_shows_the_state_there(executed: Any) -> None:
    text, html = _outputs(executed[2])
    assert "tool call call-train-1 started at step #" in text
    assert "source item: part_start" in html and "TOOL_CALL_START" in html
    text, html = _outputs(executed[3])
    # The cell's value is the bare ProjectionState: its HTML comes from the formatter that importing
    # harness_agui.debug registered (the core classes carry no _repr_html_ of their own).
    assert text.startswith("ProjectionState(")
    assert "open part" in html and "call-train-1" in html
    text, _ = _outputs(executed[4])
    assert text.count("Step(#") >= 3


def test_the_notebook_diagnoses_the_broken_journal(executed: Any) -> None:
    _, html = _outputs(executed[5])
    assert "failed at item #" in html and "state before the failure" in html
    text, _ = _outputs(executed[6])
    assert text.startswith("failed at item #")
    # The error is the history-order subclass of AguiObservationError that names the fault.
    assert "stage 'project'" in text and ("AguiObservationError:" in text or "SequenceOrderError:" in text)
