"""Looking at a Run: step-through replay and diagnosis (``replay``),
renderings of the AG-UI conversation (folded once, by
``harness_agui.core.conversation``) as a terminal view (``pretty``) and as
text and HTML views (``views``), the one escaping function for terminal text
(``text``), and Jupyter support (``show``; importing this package makes a
running IPython shell draw ProjectionState and HarnessAguiObserver values as
HTML).

Layers inside: ``text`` < ``pretty`` < ``views`` < ``replay`` <
``notebook``; each module imports only modules to its left (and the core and
wire layers), which ``tests/test_import_graph.py`` checks.
"""

from .notebook import load_ipython_extension, register_formatters, show
from .views import View

__all__ = ["show", "View", "register_formatters", "load_ipython_extension"]

register_formatters()
