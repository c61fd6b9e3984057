"""Settings modules with one mistake each, for ``manage.py check`` in a subprocess
(tests/test_checks_command.py): the checks as users meet them."""
