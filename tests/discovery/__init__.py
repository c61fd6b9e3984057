"""Modules that stand for a project's layout mistakes: ``@job`` outside ``jobs.py`` (never
autodiscovered) and ``job(...)(function)`` applied in ``jobs.py`` to a function defined
elsewhere. Imported only by the settings modules the discovery tests write."""
