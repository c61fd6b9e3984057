"""When a schedule is overdue: the pure rule (docs/design.md, "Overdue schedules")."""

from datetime import UTC, datetime, timedelta

from django_cadence.schedule import silence, specs

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def _interval(every: timedelta) -> specs.Spec:
    return specs.Spec(kind="interval", interval=every, anchor=T0)


def test_the_retry_ladder_sums_the_longest_backoffs_before_each_retry():
    base, cap = timedelta(seconds=10), timedelta(seconds=30)
    assert silence.retry_ladder(1, base=base, cap=cap) == timedelta(0)
    assert silence.retry_ladder(3, base=base, cap=cap) == timedelta(seconds=10 + 20)
    assert silence.retry_ladder(5, base=base, cap=cap) == timedelta(seconds=10 + 20 + 30 + 30)


def test_by_default_two_periods_after_the_last_success_plus_the_ladder():
    ladder = timedelta(minutes=3)
    success = T0 + timedelta(minutes=1)  # the T0 occurrence finished a minute late
    deadline = silence.overdue_at(_interval(HOUR), success, max_silence=None, ladder=ladder)
    assert deadline == T0 + 2 * HOUR + ladder
    assert not silence.is_overdue(deadline, deadline)
    assert silence.is_overdue(deadline, deadline + timedelta(microseconds=1))


def test_a_cron_rule_counts_its_own_gaps_a_weekend_included():
    weekdays = specs.Spec(kind="cron", cron="0 9 * * 1-5", timezone="UTC", anchor=T0)
    friday = datetime(2026, 6, 5, 9, 1, tzinfo=UTC)
    deadline = silence.overdue_at(weekdays, friday, max_silence=None, ladder=timedelta(0))
    assert deadline == datetime(2026, 6, 9, 9, 0, tzinfo=UTC)  # Tuesday's run, not Saturday


def test_max_silence_replaces_the_rule():
    deadline = silence.overdue_at(
        _interval(HOUR), T0, max_silence=timedelta(minutes=90), ladder=timedelta(hours=5)
    )
    assert deadline == T0 + timedelta(minutes=90)


def test_a_rule_with_nothing_left_is_never_overdue():
    once = specs.Spec(kind="once", run_at=T0, anchor=T0)
    assert silence.overdue_at(once, T0, max_silence=None, ladder=HOUR) is None
    assert not silence.is_overdue(None, T0 + 1000 * HOUR)
    # Before it ran, its one occurrence (and its retries) bound the silence.
    before = silence.overdue_at(once, T0 - HOUR, max_silence=None, ladder=HOUR)
    assert before == T0 + HOUR


def test_a_deadline_moves_by_as_long_as_the_first_occurrence_waited_to_be_planned():
    deadline = T0 + 3 * HOUR
    first = T0 + HOUR
    assert silence.planned_late(deadline, first, first) == deadline  # on its instant
    assert silence.planned_late(deadline, first, first - timedelta(seconds=1)) == deadline
    late = first + timedelta(minutes=7)
    assert silence.planned_late(deadline, first, late) == deadline + timedelta(minutes=7)
    assert silence.planned_late(None, first, late) is None
    assert silence.planned_late(deadline, None, late) == deadline
