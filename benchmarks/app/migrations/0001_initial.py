from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="Firing",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("schedule_name", models.CharField(max_length=200)),
                ("due_at", models.DateTimeField()),
                ("started_at", models.DateTimeField()),
                ("worker", models.CharField(blank=True, max_length=100)),
            ],
            options={
                "db_table": "bench_firing",
                "indexes": [models.Index(fields=["due_at"], name="bench_firing_due_idx")],
            },
        ),
    ]
