"""Secrets masked by their shape, whatever the environment holds (flow/core/redact.py RULES):
private keys, GitHub tokens, AWS keys, Authorization headers, URL passwords, NAME=value of a
secret name; ordinary data (commit shas, test ids, URLs without a password) left alone; and
the doors that apply them: ``jsonio.dumps`` and a child's streamed log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flow.core import proc
from flow.core.jsonio import digest, dumps
from flow.core.redact import redact, redact_bytes

NO_ENV: dict[str, str] = {}
BODY = "MIIEpAIBAAKCAQEAplantedKeyBodyLine0123456789abcdefghijklmnopqrstu"


@pytest.mark.parametrize("kind", ["", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED ",
                                  "PGP ", "ANY "])
def test_every_private_key_block_is_masked_keeping_its_begin_and_end(kind: str) -> None:
    """A key block, as lines, as one line (`` | ``-joined) or JSON-escaped, keeps only its
    BEGIN and END lines; ``PGP PRIVATE KEY BLOCK`` too."""
    tail = "BLOCK" if kind == "PGP " else ""
    label = f"{kind}PRIVATE KEY{' ' + tail if tail else ''}"
    block = (f"-----BEGIN {label}-----\nProc-Type: 4,ENCRYPTED\n\n{BODY}\n{BODY}\n"
             f"-----END {label}-----")
    for text in (f"before\n{block}\nafter", block.replace("\n", " | "),
                 json.dumps({"k": block})):
        masked = redact(text, NO_ENV)
        assert BODY not in masked and "ENCRYPTED\n" not in masked
        assert f"-----BEGIN {label}-----***" in masked and f"-----END {label}-----" in masked


def test_a_key_block_cut_before_its_end_is_masked_to_the_end_of_its_body() -> None:
    """A log tail that holds the BEGIN line and part of the body (no END) loses the body."""
    assert "-----BEGIN PRIVATE KEY-----***(after)" == redact(
        f"-----BEGIN PRIVATE KEY-----\n{BODY}\n{BODY[:20]}(after)", NO_ENV)


@pytest.mark.parametrize("text,expected", [
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "aws_secret_access_key = ***"),
    ('{"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}',
     '{"SecretAccessKey": "***"}'),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "AWS_SECRET_ACCESS_KEY=***"),
    ("id AKIAIOSFODNN7EXAMPLE", "id ***"),
    ("AKIAIOSFODNN7EXAMPLE,wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n", "***\n"),
    ("ghp_" + "a1B2" * 9 + " gho_" + "a1B2" * 9 + " ghs_" + "a1B2" * 9 + " ghu_" + "a1B2" * 9
     + " ghr_" + "a1B2" * 9, "*** *** *** *** ***"),
    ("github_pat_11ABCDEFG0_" + "x1Y2" * 10, "***"),
    ("curl -H 'Authorization: Bearer abc.def-ghi' https://x",
     "curl -H 'Authorization: Bearer ***' https://x"),
    ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic ***"),
    ("authorization=token 0123abcd", "authorization=token ***"),
    ("Proxy-Authorization: Negotiate YIIabc", "Proxy-Authorization: Negotiate ***"),
    ('{\\"Authorization\\": \\"token abcdef\\"}', '{\\"Authorization\\": \\"token ***\\"}'),
    ("got bearer abcdefghijklmnop0123 back", "got bearer *** back"),
    ("https://x-access-token:s3cr3t@github.com/a/b", "https://x-access-token:***@github.com/a/b"),
    ("POSTGRESQL+psycopg://u:p%40ss@h/d and postgres://me:pw@db/x",
     "POSTGRESQL+psycopg://u:***@h/d and postgres://me:***@db/x"),
    ("export PGPASSWORD=hunter22 DEPLOY_TOKEN='abcdefgh' --password=correcthorse",
     "export PGPASSWORD=*** DEPLOY_TOKEN='***' --password=***"),
    ("host=db password=hunter22 user=me", "host=db password=*** user=me"),
])
def test_a_secret_is_masked_by_its_shape_without_the_environment(text: str, expected: str) -> None:
    assert expected == redact(text, NO_ENV)


@pytest.mark.parametrize("text", [
    "commit " + "0123456789abcdef" * 2 + "01234567 and " + "f" * 64,
    "tests/test_x.py::TestTokens::test_token_refresh[token-1-AKIA] PASSED",
    "tests/test_auth.py::test_login[password=pw] FAILED",
    "https://github.com/pytorch/pytorch/pull/1 ssh://git@github.com:22/x.git git@github.com:a/b",
    "mailto:someone@example.com, user@host:path",
    "SyntaxError: unexpected token ')' at line 3; token: x; max_tokens=4096",
    "ORCHESTRATOR_SECRET_ENV=GPG_KEY ORCHESTRATOR_PASS_ENV=AWS_* ORCHESTRATOR_GITHUB_TOKEN_FILE=/x",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
    "AKIA in a sentence, highs_abcdefghijklmnopqrstuvwxyz, xghp_" + "a" * 36,
])
def test_ordinary_data_is_left_alone(text: str) -> None:
    """Commit shas, test ids, URLs and ssh remotes without a password, certificates, hints
    that name settings: nothing to mask."""
    assert text == redact(text, NO_ENV)


def test_a_value_is_masked_however_json_quotes_it() -> None:
    """A secret setting's value with a quote and a backslash is masked in text and in the
    JSON ``dumps`` writes."""
    env = {"ODD_TOKEN": 'ab"cd\\ef-0123'}
    assert "x *** y" == redact('x ab"cd\\ef-0123 y', env)
    assert "x *** y" == redact('x ab\\"cd\\\\ef-0123 y', env)


def test_dumps_masks_composed_text_and_keys_but_digest_hashes_the_raw_value(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A blocker composed from a log, a key that holds a token: masked on the way out; a
    content hash still tells two secrets apart (it is no way out)."""
    monkeypatch.setenv("MY_SERVICE_SECRET", "svc-secret-value-42")
    obj = {"verdict": {"blocker": "build failed: svc-secret-value-42 | -----BEGIN PRIVATE KEY"
                                  f"----- | {BODY}"},
           "ghp_" + "Z9" * 18: [1, "ok"]}
    out = json.loads(dumps(obj))
    assert {"verdict": {"blocker": "build failed: *** | -----BEGIN PRIVATE KEY-----***"},
            "***": [1, "ok"]} == out
    assert digest({"a": "ghp_" + "Z9" * 18}) != digest({"a": "ghp_" + "Y8" * 18})
    assert dumps({"a": "plain"}) == b'{\n  "a": "plain"\n}'


def test_bytes_that_are_not_utf8_pass_through_around_a_masked_token() -> None:
    data = b"\xff\xfe gho_" + b"Q" * 36 + b" \xc3("
    assert b"\xff\xfe *** \xc3(" == redact_bytes(data)


def test_a_child_log_masks_a_key_it_prints_however_the_bytes_arrive(tmp_path: Path) -> None:
    """One byte per write: the key block (held back until its END line) and a URL password
    never reach the file; the rest of the output does, in order."""
    log = proc.CappedLog(tmp_path / "l.log", 1 << 20, b"")
    text = (f"start\n-----BEGIN OPENSSH PRIVATE KEY-----\n{BODY}\n{BODY}\n"
            "-----END OPENSSH PRIVATE KEY-----\nfetch https://u:pw-123456@h/x\nend")
    for byte in text.encode():
        log.write(bytes([byte]))
    log.close()
    assert ("start\n-----BEGIN OPENSSH PRIVATE KEY-----***-----END OPENSSH PRIVATE KEY-----\n"
            "fetch https://u:***@h/x\nend") == (tmp_path / "l.log").read_text()


def test_a_child_that_prints_a_key_from_a_file_leaves_none_in_its_log(tmp_path: Path) -> None:
    """A real child reading a key file: neither the foreground log nor the output read back
    holds the key's body."""
    key = tmp_path / "id_ed25519"
    key.write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{BODY}\n"
                   "-----END OPENSSH PRIVATE KEY-----\n")
    res = proc.run(["cat", str(key)], log=tmp_path / "cat.log")
    assert 0 == res.code and BODY not in (tmp_path / "cat.log").read_text()
    assert "-----BEGIN OPENSSH PRIVATE KEY-----***-----END OPENSSH PRIVATE KEY-----" in res.output


def test_a_secret_value_is_masked_as_a_whole_word_only() -> None:
    """``PGPASSWORD=postgres`` masks the word, not the scheme of a printed store URL (a
    command the harness must run); a value that ends in a symbol is masked anywhere."""
    env = {"PGPASSWORD": "postgres", "ODD_SECRET": "-weird-value-"}
    assert "--store postgresql://***@db/*** x***y" == redact(
        "--store postgresql://postgres@db/postgres x-weird-value-y", env)


def test_a_child_log_masks_a_value_as_a_whole_word_however_the_bytes_arrive(
        tmp_path: Path) -> None:
    log = proc.CappedLog(tmp_path / "l.log", 1 << 20, b"", mask=[b"postgres"])
    for byte in b"postgresql://postgres@db postgres\npostgres":
        log.write(bytes([byte]))
    log.close()
    assert "postgresql://***@db ***\n***" == (tmp_path / "l.log").read_text()
