"""An attempt's schedule, occurrence and trigger cannot change (invariant 7, docs/design.md).

A database trigger refuses the change whatever the path (the SQL is in
``django_cadence/store/identity_guard.py``). It comes after every migration that rebuilds
the attempts table on SQLite, which would drop it.
"""

from django.db import migrations

from django_cadence.store import identity_guard


class Migration(migrations.Migration):
    dependencies = [
        ("django_cadence", "0003_attempt_uncertain"),
    ]

    operations = [
        migrations.RunPython(
            identity_guard.install, identity_guard.remove, atomic=False, elidable=False
        ),
    ]
