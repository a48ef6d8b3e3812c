"""Private queries (issue: guardrails): personal data redacted from everything written for people, while the
measures read the text; caches keyed by hashes and kept per tenant on request."""

import io
import json
from pathlib import Path

import pytest
import yaml

from rerankeval.core import caches
from rerankeval.core.caches import cache_dir
from rerankeval.core.config import StrictConfig  # noqa: F401  (PrivacyConfig is one)
from rerankeval.core.errors import ConfigError
from rerankeval.core.privacy import PrivacyConfig, RedactingStream, redact_values, redactor

REPO = Path(__file__).resolve().parents[1]
PLANTED = ("jane.doe@example.com", "415-555-0142", "900101-1234567")
"""The personal data the demo's two questions carry (datasets/demo-src/unanswerable.yaml)."""


@pytest.mark.parametrize("text, expected", [
    ("write to jane.doe@example.com today", "write to [redacted:email] today"),
    ("call +1 415-555-0142 or 010-1234-5678 or +82 10 1234 5678", "call [redacted:phone] or [redacted:phone] or "
                                                                  "[redacted:phone]"),
    ("주민등록번호 900101-1234567 로", "주민등록번호 [redacted:kr_rrn] 로"),
    ("card 4111 1111 1111 1111 charged", "card [redacted:card] charged"),
    ("card 4111-1111-1111-1111", "card [redacted:card]"),
])
def test_each_kind_is_redacted(text, expected):
    assert redactor()(text) == expected


@pytest.mark.parametrize("text", [
    "PAY-1042 on 2024-04-01 costs $30 per TB", "version 1.2.3 at 12:30", "request id 7f3a 000123 2000",
    "1234567890123", "order 4111111111111112",  # fails the Luhn check: no card
])
def test_ids_dates_prices_and_non_cards_are_left_alone(text):
    assert redactor()(text) == text


def test_the_demo_collection_has_no_false_positive_outside_the_planted_questions():
    redact = redactor()
    changed = []
    for name in ("corpus.jsonl", "queries.jsonl"):
        for line in (REPO / "datasets" / "demo" / name).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            text = f"{record.get('title', '')} {record['text']}"
            if redact(text) != text:
                changed.append(record["_id"])
    assert changed == ["q0251", "q0252"]


def test_configured_kinds_and_own_patterns():
    only_email = redactor(PrivacyConfig(redact=["email"], patterns=[r"ACC-\d{6}"]))
    assert only_email("a@b.io 010-1234-5678 ACC-123456") == "[redacted:email] 010-1234-5678 [redacted:custom]"
    with pytest.raises(ConfigError, match=r"privacy.patterns.*not a regular expression"):
        PrivacyConfig.parse({"patterns": ["(unclosed"]}, "privacy")


def test_json_values_are_redacted_keys_included_and_structure_kept():
    found = redact_values({"q jane.doe@example.com": ["x 900101-1234567", 3, None]}, redactor())
    assert found == {"q [redacted:email]": ["x [redacted:kr_rrn]", 3, None]}


def test_a_log_stream_redacts_whole_lines_even_when_written_in_pieces():
    sink = io.StringIO()
    stream = RedactingStream(sink, redactor())
    stream.write("query: jane.doe@exa")
    assert sink.getvalue() == ""  # held until the line ends: half an address would slip through
    stream.write("mple.com\nnext 900101-1234567")
    stream.flush()
    assert sink.getvalue() == "query: [redacted:email]\nnext [redacted:kr_rrn]"


def test_a_tenant_gets_its_own_cache_folder_named_by_a_hash(monkeypatch):
    monkeypatch.delenv("RERANKEVAL_CACHE_DIR", raising=False)
    monkeypatch.delenv("DVC_ROOT", raising=False)
    shared = cache_dir("data/score_cache")
    monkeypatch.setenv("RERANKEVAL_CACHE_TENANT", "acme-bank")
    first = cache_dir("data/score_cache")
    monkeypatch.setenv("RERANKEVAL_CACHE_TENANT", "globex")
    second = cache_dir("data/score_cache")
    assert len({shared, first, second}) == 3 and first.parent == shared
    assert "acme" not in str(first) and first.name.startswith("tenant-")


@pytest.fixture
def no_tenant(monkeypatch):
    """A process without a tenant, and the module's tenant state restored after the test."""
    for name in ("RERANKEVAL_CACHE_DIR", "RERANKEVAL_CACHE_TENANT", "DVC_ROOT"):
        monkeypatch.delenv(name, raising=False)
    yield
    caches.use_tenant(None)


def test_the_configured_tenant_gets_its_own_cache_folder_and_the_environment_overrides_it(no_tenant, monkeypatch):
    shared = cache_dir("data/score_cache")
    caches.use_tenant("acme-bank")
    configured = cache_dir("data/score_cache")
    monkeypatch.setenv("RERANKEVAL_CACHE_TENANT", "globex")
    overridden = cache_dir("data/score_cache")
    assert configured.parent == shared and "acme" not in str(configured)
    assert overridden.parent == shared and overridden != configured
    with pytest.raises(ConfigError, match="tenant"):
        PrivacyConfig.parse({"tenant": ""}, "privacy")


def record_settings(stage: str, item: str | None = None) -> None:
    """What the code stage writes ``stage`` (its instance for ``item``) of params.yaml in the working folder: the
    settings the entry point runs it on (``pipeline.code``)."""
    from rerankeval.pipeline import code
    from rerankeval.pipeline.params import load_params
    from rerankeval.pipeline.system_configs import system_configs
    from rerankeval.pipeline.table import BY_NAME, code_file

    loaded = load_params(stage="code")
    settings = code.stage_settings(loaded, BY_NAME[stage], item, system_configs(loaded))
    Path("data/code").mkdir(parents=True, exist_ok=True)
    name = code_file(BY_NAME[stage]) if item is None else code_file(BY_NAME[stage], item)
    Path("data/code", name).write_text(json.dumps({"settings": settings}))


def _run_stage_opening_a_cache(monkeypatch, tmp_path, stage: str, system: list[str], tenant: str | None) -> Path:
    """The entry point's ``run`` for ``stage`` with params.yaml's privacy.tenant set, the stage's module replaced by one
    that opens a cache and returns its folder."""
    import yaml

    from rerankeval.pipeline import __main__ as entry

    params = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    params["privacy"]["tenant"] = tenant
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    (tmp_path / "dvc.yaml").write_text((REPO / "dvc.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    record_settings(stage, system[0] if system else None)
    opened = []
    monkeypatch.setattr(entry, "import_module", lambda name: type("Stage", (), {
        "run": staticmethod(lambda *args: opened.append(cache_dir("data/score_cache")))}))
    entry.run(stage, system)
    return opened[0]


def test_a_stage_opens_its_tenants_cache_and_one_that_does_not_declare_the_tenant_cannot_open_one(
        no_tenant, monkeypatch, tmp_path):
    shared = _run_stage_opening_a_cache(monkeypatch, tmp_path, "rerank", ["ce_minilm_ft"], None)
    tenants = {tenant: _run_stage_opening_a_cache(monkeypatch, tmp_path, "rerank", ["ce_minilm_ft"], tenant)
               for tenant in ("acme-bank", "globex")}
    assert shared == Path("data/score_cache") and len(set(tenants.values())) == 2
    assert all(folder.parent == shared and folder.name.startswith("tenant-") for folder in tenants.values())
    with pytest.raises(AssertionError, match="evaluate opened a cache but does not declare privacy.tenant"):
        _run_stage_opening_a_cache(monkeypatch, tmp_path, "evaluate", [], "acme-bank")


def test_the_stage_logs_are_redacted(tmp_path):
    """The pipeline's entry point redacts its own stdout and stderr (run as DVC runs it, a process of its own)."""
    import subprocess
    import sys

    script = ("import sys; from rerankeval.core.privacy import redact_logs; redact_logs(); "
              "print('query jane.doe@example.com'); print('rrn 900101-1234567', file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout == "query [redacted:email]\n" and done.stderr == "rrn [redacted:kr_rrn]\n"
    source = (REPO / "src" / "rerankeval" / "pipeline" / "__main__.py").read_text()
    assert "redact_logs()" in source.split('if __name__ == "__main__":')[1]
    # once the stage has read privacy.patterns, its own patterns too; every built-in kind stays redacted in a log
    script = ("from rerankeval.core.privacy import PrivacyConfig, redact_logs; redact_logs(); "
              "print('before', end=' '); redact_logs(PrivacyConfig(redact=[], patterns=[r'TICKET-\\d+'])); "
              "print('TICKET-4471 of jane.doe@example.com')")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout == "before [redacted:custom] of [redacted:email]\n"


def test_the_entry_point_redacts_a_stage_s_log_with_the_configured_patterns(tmp_path, monkeypatch):
    import shutil

    import rerankeval.pipeline.__main__ as entry
    import rerankeval.pipeline.snapshot as snapshot_stage

    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["privacy"] = {**(params.get("privacy") or {}), "patterns": [r"TICKET-\d+"]}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    shutil.copy(REPO / "dvc.yaml", tmp_path / "dvc.yaml")
    monkeypatch.chdir(tmp_path)
    record_settings("snapshot")
    used, ran = [], []
    monkeypatch.setattr(entry, "redact_logs", lambda config=None: used.append(config))
    monkeypatch.setattr(snapshot_stage, "run", lambda params, paths: ran.append(params))
    entry._run("snapshot", [])  # snapshot declares no privacy setting: a log is no output
    assert ran and [config.patterns for config in used] == [[r"TICKET-\d+"]]


def test_nothing_written_for_people_holds_the_planted_personal_data():
    """The demo's reports (the online readouts and shadow replay included), site, compare and verdict files, judging
    queue, caches (pair scores, LLM replies), latency measurements and sweeps (after `make demo`) name the two
    questions but show neither their e-mail address, phone number nor resident registration number."""
    written = [path for folder in ("reports", "data/score_cache", "data/generation_cache", "data/runs",
                                   "data/contexts", "data/answers", "data/eval", "data/latency", "data/sweeps", "logs")
               for path in (REPO / folder).rglob("*") if path.is_file()]
    assert any(path.name == "explorer.html" for path in written) and any(path.suffix == ".tsv" for path in written)
    for path in written:
        data = path.read_bytes()
        for planted in PLANTED:
            assert planted.encode() not in data, f"{planted} is written in {path.relative_to(REPO)}"
    explorer = (REPO / "reports" / "site" / "explorer.html").read_text(encoding="utf-8")
    assert "[redacted:email]" in explorer and "[redacted:kr_rrn]" in explorer  # the questions are there, redacted
