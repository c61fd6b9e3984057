"""One redaction for job text: a table of realistic texts, and its properties; no database.

Each row is a text a job could raise, return or log, the secrets in it (each must be absent
from the result) and the context around them (each must be kept).
"""

from __future__ import annotations

import pytest
from django.test import override_settings
from hypothesis import given
from hypothesis import strategies as st

from django_cadence.executors.redaction import (
    MAX_TEXT_CHARS,
    REDACTED,
    clean_text,
    is_secret_key,
    redact,
    redact_text,
    storable_text,
)

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAs3cr3tK3yB0dyL1ne0ne\n"
    "Zm9vYmFyYmF6c2VjcmV0a2V5bGluZXR3bw==\n"
    "-----END RSA PRIVATE KEY-----"
)

# (id, text, secrets that must be gone, context that must stay)
TABLE = [
    (
        "postgres-dsn",
        'OperationalError: could not connect to "postgres://app:Pg-s3cret@db.internal:5432/prod"',
        ["Pg-s3cret"],
        ["postgres://app:", "@db.internal:5432/prod", "OperationalError"],
    ),
    (
        "redis-password-only",
        "ConnectionError: Error connecting to redis://:r3dis-pass@cache:6379/0.",
        ["r3dis-pass"],
        ["redis://:", "@cache:6379/0"],
    ),
    (
        "amqp",
        "kombu: amqp://guest:rabbit-pw@rabbit:5672// refused",
        ["rabbit-pw"],
        ["amqp://guest:", "@rabbit:5672//", "refused"],
    ),
    (
        "sqlalchemy-driver-scheme",
        "create_engine('mysql+pymysql://root:My$ql!pw@mysql/app?charset=utf8mb4')",
        ["My$ql!pw"],
        ["mysql+pymysql://root:", "@mysql/app?charset=utf8mb4"],
    ),
    (
        "https-token-as-user",
        "git clone https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/org/repo.git failed",
        ["ghp_16C7e42F292c6912E7710c838347Ae178B4a"],
        ["https://", "@github.com/org/repo.git", "failed"],
    ),
    (
        "password-with-at-sign",
        "dsn postgresql://svc:p@ss@w0rd@10.0.0.5/db",
        ["p@ss@w0rd", "w0rd"],
        ["postgresql://svc:", "@10.0.0.5/db"],
    ),
    (
        "bearer-header-line",
        "401 for GET /v1/me\nAuthorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln\nok",
        ["eyJhbGciOiJIUzI1NiJ9", "c2ln"],
        ["401 for GET /v1/me", "Authorization: Bearer", "\nok"],
    ),
    (
        "basic-header",
        "request headers: Authorization: Basic dXNlcjpodW50ZXIy, Accept: */*",
        ["dXNlcjpodW50ZXIy"],
        ["Authorization: Basic", "Accept: */*"],
    ),
    (
        "x-api-key-header",
        "HTTPError 403 (X-Api-Key: live_8f2c1e9a77)",
        ["live_8f2c1e9a77"],
        ["HTTPError 403", "X-Api-Key:"],
    ),
    (
        "header-tuples",
        "headers=[('Authorization', 'Bearer abc.def.ghi'), ('Accept', 'application/json')]",
        ["abc.def.ghi"],
        ["'Authorization'", "('Accept', 'application/json')"],
    ),
    (
        "header-dict",
        "requests.get(url, headers={'authorization': 'Token 9f8e7d6c', 'user-agent': 'cadence'})",
        ["9f8e7d6c"],
        ["'authorization'", "'user-agent': 'cadence'"],
    ),
    (
        "bare-bearer",
        "retrying with Bearer sk_live_abcdefghijklmnop after 401",
        ["sk_live_abcdefghijklmnop"],
        ["retrying with Bearer", "after 401"],
    ),
    (
        "key-equals-value",
        "login failed for user=bob password=hunter2 host=db1",
        ["hunter2"],
        ["user=bob", "password=", "host=db1"],
    ),
    (
        "key-colon-value",
        "config: {secret: s3cr3t-value, region: eu-west-1}",
        ["s3cr3t-value"],
        ["region: eu-west-1"],
    ),
    (
        "spellings",
        "passwd=pw1 pwd=pw2 pass=pw3 client_secret=cs4 access_token=at5 refresh_token=rt6",
        ["pw1", "pw2", "pw3", "cs4", "at5", "rt6"],
        ["passwd=", "pwd=", "pass=", "client_secret=", "access_token=", "refresh_token="],
    ),
    (
        "api-key-variants",
        "api_key=k1 apikey=k2 api-key=k3 'api key': 'k4' API_KEY: k5",
        ["k1", "k2", "k3", "k4", "k5"],
        ["api_key=", "apikey=", "api-key=", "'api key': '", "API_KEY:"],
    ),
    (
        "private-key-dsn-credentials",
        "private key: pk-material; SENTRY_DSN=https://abc@o1.ingest.io/2 credentials=cred7",
        ["pk-material", "abc@", "cred7"],
        ["private key:", "SENTRY_DSN=", "credentials="],
    ),
    (
        "quoted-value-with-spaces",
        "KeyError: password='correct horse battery staple' not accepted",
        ["correct", "horse", "battery", "staple"],
        ["KeyError: password='", "not accepted"],
    ),
    (
        "json-value-with-spaces",
        'ValueError: {"token": "two words", "user": "bob"}',
        ["two words"],
        ['"user": "bob"', "ValueError"],
    ),
    (
        "json-escaped-in-a-string",
        'RuntimeError(\'bad body: {\\"password\\": \\"x y z\\", \\"user\\": \\"bob\\"}\')',
        ["x y z"],
        ['\\"user\\": \\"bob\\"', "RuntimeError"],
    ),
    (
        "bytes-keys",
        "TypeError: {b'password': b'hunter2', b'user': b'bob'}",
        ["hunter2"],
        ["b'user': b'bob'", "TypeError"],
    ),
    (
        "pem-block",
        f"ValueError: could not load key:\n{PEM}\nwhile signing",
        ["MIIEowIBAAKCAQEAs3cr3tK3yB0dyL1ne0ne", "Zm9vYmFyYmF6c2VjcmV0a2V5bGluZXR3bw=="],
        ["-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "while signing"],
    ),
    (
        "pem-block-in-a-repr",
        repr({"key": PEM}),
        ["MIIEowIBAAKCAQEAs3cr3tK3yB0dyL1ne0ne"],
        ["-----BEGIN RSA PRIVATE KEY-----"],
    ),
    (
        "pem-block-cut-short",
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
        ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"],
        ["-----BEGIN PRIVATE KEY-----"],
    ),
    (
        "traceback-with-locals",
        (
            'Traceback (most recent call last):\n  File "jobs.py", line 3, in sync\n'
            "    connect(dsn)\nsmtplib.SMTPAuthenticationError: (535, b'auth failed') "
            "smtp_password='Sm7p pass'"
        ),
        ["Sm7p pass"],
        ['File "jobs.py", line 3, in sync', "smtplib.SMTPAuthenticationError"],
    ),
    (
        "auth-tuple",
        "requests.get(url, auth=('deploy', 'dep-pw-99'))",
        ["dep-pw-99"],
        ["requests.get(url, auth="],
    ),
]

NOTHING_SECRET = [
    "compass=north passengers=3 author=ana bypass=false",
    "Processed 1200 rows in 3.2 s; next run at 2026-06-01T12:00:00+00:00",
    "mailto:ops@example.com and ana@example.com",
    "GET https://example.com/path?page=2&sort=name",
    "KeyError: 'name'",
]


@pytest.mark.parametrize(
    ("text", "secrets", "kept"), [row[1:] for row in TABLE], ids=[r[0] for r in TABLE]
)
def test_redact_text_hides_every_secret_and_keeps_the_context(text, secrets, kept):
    redacted = redact_text(text)
    for secret in secrets:
        assert secret not in redacted
    for context in kept:
        assert context in redacted
    assert REDACTED in redacted


@pytest.mark.parametrize("text", NOTHING_SECRET)
def test_redact_text_leaves_text_without_secrets_alone(text):
    assert redact_text(text) == text


@pytest.mark.parametrize(
    ("text", "secrets", "kept"), [row[1:] for row in TABLE], ids=[r[0] for r in TABLE]
)
def test_clean_text_redacts_the_same_table(text, secrets, kept):
    cleaned = clean_text(text)
    assert not any(secret in cleaned for secret in secrets)


@override_settings(CADENCE_SECRET_KEYS=["sortcode", "iban"])
def test_secret_keys_setting_adds_names_to_text_and_values():
    text = "transfer sortcode=12-34-56 iban: GB29NWBK60161331926819 password=pw amount=3"
    redacted = redact_text(text)
    assert "12-34-56" not in redacted
    assert "GB29NWBK60161331926819" not in redacted
    assert "pw " not in redacted  # the built-in names still apply
    assert "amount=3" in redacted
    assert redact({"IBAN": "x", "amount": 3}) == {"IBAN": REDACTED, "amount": 3}


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("password", True),
        ("DB_PASSWORD", True),
        ("X-Api-Key", True),
        ("api key", True),
        ("apikey", True),
        ("db_pass", True),
        ("pwd", True),
        ("SENTRY_DSN", True),
        ("Authorization", True),
        ("compass", False),
        ("passengers", False),
        ("author", False),
        ("name", False),
    ],
)
def test_is_secret_key(key, secret):
    assert is_secret_key(key) is secret


def test_redact_hides_secret_keys_in_metadata_like_values():
    value = {"owner": "ana", "api-key": "k", "nested": [{"client_secret": "s", "n": 1}]}
    assert redact(value) == {
        "owner": "ana",
        "api-key": REDACTED,
        "nested": [{"client_secret": REDACTED, "n": 1}],
    }


# --- clean_text: storable, bounded, never raising ---------------------------------------------


def test_storable_text_replaces_lone_surrogates_and_nul():
    assert storable_text("re\udcffport\x00.csv") == "re\ufffdport\\x00.csv"
    storable_text("re\udcffport\x00.csv").encode("utf-8")


def test_clean_text_bounds_a_megabyte_and_says_it_was_cut():
    text = "boom " + "x" * 3_000_000 + " password=late"
    cleaned = clean_text(text)
    assert len(cleaned) <= MAX_TEXT_CHARS
    assert cleaned.endswith(f"[cut: {len(text)} characters]")


def test_clean_text_hides_a_secret_that_the_cut_falls_in():
    text = "x" * (MAX_TEXT_CHARS - 20) + " token='" + "s" * 5_000 + "'"
    assert "s" * 10 not in clean_text(text)


class RaisingStr:
    def __str__(self):
        raise RuntimeError("no str")


def test_clean_text_of_an_object_whose_str_raises():
    assert clean_text(RaisingStr()) == "<RaisingStr whose str() raised>"


# --- properties -----------------------------------------------------------------------------

_PIECES = [
    "password",
    "token",
    "api key",
    "Authorization",
    "Bearer ",
    "Basic ",
    "pass",
    "postgres://",
    "u:p@h",
    "@",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    "b'",
    "x",
    "abc123",
    "=",
    ":",
    ",",
    " ",
    "\t",
    "'",
    '"',
    '\\"',
    "\\",
    "\n",
    "(",
    ")",
    "{",
    "}",
    "\udcff",
    "\x00",
    "()",
    "(a)",
    "0",
    "é",
    "_",
    ".",
    "://",
    "dsn",
]
ANY_TEXT = st.text(st.one_of(st.characters(), st.characters(categories=["Cs"])), max_size=200)
SECRETISH_TEXT = st.lists(st.sampled_from(_PIECES), max_size=16).map("".join)


@given(st.one_of(ANY_TEXT, SECRETISH_TEXT))
def test_redact_text_is_idempotent_and_never_raises(text):
    once = redact_text(text)
    assert redact_text(once) == once


@given(st.one_of(ANY_TEXT, SECRETISH_TEXT), st.integers(min_value=0, max_value=300))
def test_clean_text_is_always_storable_bounded_and_idempotent(text, limit):
    cleaned = clean_text(text, limit)
    cleaned.encode("utf-8")  # no lone surrogate left
    assert "\x00" not in cleaned
    assert len(cleaned) <= max(limit, len(f"\n[cut: {len(text)} characters]"))
    if not cleaned.endswith(" characters]"):  # a text that was not cut: cleaning is done
        assert clean_text(cleaned, limit) == cleaned
