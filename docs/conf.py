"""Sphinx configuration: MyST Markdown pages, the furo theme, the reference from docstrings.

The build is offline (no intersphinx) and strict: ``make docs`` runs ``sphinx-build -W``, so
a broken link, a missing page in a toctree or a malformed docstring fails it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import django
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Just enough of a project for autodoc to import the models, services, signals and jobs.
if not settings.configured:
    settings.configure(
        SECRET_KEY="django-cadence-docs",  # noqa: S106 - never serves a request
        USE_TZ=True,
        TIME_ZONE="UTC",
        INSTALLED_APPS=[
            "django.contrib.contenttypes",
            "django.contrib.auth",
            "dalf",
            "django_cadence",
        ],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    )
django.setup()

project = "django-cadence"
author = "django-cadence developers"
copyright = "django-cadence developers"
release = "1.0.0rc1"

extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "screenshots", "**/README.md", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"show-inheritance": False}

nitpicky = False

html_theme = "furo"
html_title = "django-cadence"
