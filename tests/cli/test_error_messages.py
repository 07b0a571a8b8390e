"""How commands end on bad input: data errors as one line, usage errors with click's usage text."""

from __future__ import annotations

from click.testing import CliRunner

from batsim_google.cli import main


def test_a_data_error_is_one_line_without_the_usage_text(tmp_path):
    model = tmp_path / "m.toml"
    model.write_text("not = [valid\n")
    result = CliRunner().invoke(
        main, ["generate", "--model", str(model), "--tasks", "3", "-o", str(tmp_path / "w.json")]
    )
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: {model}:") and "Usage:" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_options_that_do_not_go_together_keep_the_usage_text(tmp_path):
    result = CliRunner().invoke(main, ["generate", "-o", str(tmp_path / "w.json")])
    assert result.exit_code == 2
    assert "Usage:" in result.output and "give exactly one of --tasks and --duration" in result.output
