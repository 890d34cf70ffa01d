"""Looking at a Run: step-through replay and diagnosis (``replay``), the
conversation fold and its text and HTML renderings (``views``, ``pretty``)."""
