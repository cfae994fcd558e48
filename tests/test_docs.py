"""The documentation builds with mkdocs, warnings as errors, and shows what it should."""

import html
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_mkdocs_build_strict(tmp_path):
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]

    def page(path):
        """A built page's text, without tags (code blocks are split into highlighted spans)."""
        return html.unescape(re.sub(r"<[^>]+>", "", (site / path / "index.html").read_text()))

    # Tutorial code is included from the files tests/test_tutorials.py runs.
    assert "class EchoEnv(ParallelEnv):" in page("tutorials/new_environment")
    assert "class LogCoshMADQNTrainer(madqn.MADQNTrainer):" in page("tutorials/custom_loss")
    assert '"$PYTHON" -m mava_systems.evaluate' in page("tutorials/resume_and_evaluate")
    assert "--lp_launch_type=local_mp" in page("tutorials/multi_process")
    # The API reference is generated from docstrings.
    api = page("api")
    assert "Independent double-Q learners for every agent" in api
    assert "Draws curves on one figure" in api
    assert 'group "executor"' in page("architecture")
