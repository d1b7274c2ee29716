"""The real_model tier's requirements (tests/real_model_server.py): a missing model or package skips its tests outside
CI, saying what installs it, and fails them under `scripts/test.sh` (COMPUTEROPS_TESTS=full), so CI never passes
without the tier; a model file that is not the one setup fetched is refused. Quick: no server is started."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import real_model_server


def test_a_missing_model_skips_outside_ci_and_fails_under_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(real_model_server, "MODEL_FILE", tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf")
    monkeypatch.setattr(real_model_server, "ROOT", tmp_path)
    monkeypatch.setattr(real_model_server, "FULL", False)
    with pytest.raises(pytest.skip.Exception, match=r"SmolLM2-135M-Instruct\.Q4_1\.gguf.*setup\.sh --real-model"):
        real_model_server.required_real_model()
    monkeypatch.setattr(real_model_server, "FULL", True)
    with pytest.raises(pytest.fail.Exception, match=r"setup\.sh --real-model"):
        real_model_server.required_real_model()


def test_a_missing_server_package_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(real_model_server, "SERVER_PACKAGES", ("computerops", "no_such_package_here"))
    monkeypatch.setattr(real_model_server, "FULL", True)
    with pytest.raises(pytest.fail.Exception, match=r"needs no_such_package_here"):
        real_model_server.required_real_model()


def test_a_model_file_that_is_not_the_one_fetched_is_refused(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    model.write_bytes(b"not the model")
    model.with_name(model.name + ".sha256").write_text(f"{'0' * 64}  {model.name}\n", encoding="utf-8")
    monkeypatch.setattr(real_model_server, "MODEL_FILE", model)
    monkeypatch.setattr(real_model_server, "SERVER_PACKAGES", ("computerops",))
    with pytest.raises(AssertionError, match="fetch it again"):
        real_model_server.required_real_model()
    model.with_name(model.name + ".sha256").write_text(hashlib.sha256(b"not the model").hexdigest(), encoding="utf-8")
    assert real_model_server.required_real_model().path == model
