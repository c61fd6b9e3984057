"""An attempt's schedule, occurrence and trigger cannot change (invariant 7, docs/design.md).

The model guards every ORM path; where the store may create one (PostgreSQL, SQLite), a
database trigger also refuses raw SQL (``django_cadence/store/identity_guard.py``), and
MariaDB/MySQL get nothing here. It comes after every migration that rebuilds the attempts
table on SQLite, which would drop the trigger.
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
