"""The README stays true: its scenario reference is the compiled schema, and it shows
the two set-up commands and the benchmark command."""

import re
from pathlib import Path

from fabricsim import catalog
from fabricsim.cli import catalog_markdown

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_scenario_reference_matches_the_schema():
    text = README.read_text()
    m = re.search(r"<!-- catalog:begin -->\n(.*?)<!-- catalog:end -->", text, flags=re.S)
    assert m, "README lacks the catalog markers"
    assert m.group(1) == catalog_markdown(catalog()), "run scripts/update-readme"


def test_the_two_commands_and_the_benchmark_are_documented():
    text = README.read_text()
    assert "pip install . && fabricsim run" in text
    assert "./scripts/test" in text
    assert "fabricsim bench" in text and "packet-hops/s" in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert "./scripts/test" in ci


def test_every_output_column_is_documented(tmp_path):
    import fabricsim

    from fabricsim.results import TABLES

    r = fabricsim.run(fabricsim.default_scenario())
    text = README.read_text()
    for name in TABLES:
        assert f"`{name}.parquet`" in text, f"table {name} is not documented in the README"
        for col in getattr(r, name).columns:
            assert f"`{col}`" in text, f"column {col} of {name} is not documented in the README"
    for key in r.summary:
        assert f"`{key}`" in text, f"summary key {key} is not documented in the README"


def test_the_paper_notes_name_the_papers_relative_to_the_repository():
    # They named them by one machine's absolute paths (/work/shared/seeds/...).
    notes = sorted((README.parent / "docs" / "papers").glob("*.md"))
    text = "\n".join(p.read_text() for p in notes)
    absolute = re.findall(r"(?<![\w.~])/(?:work|home|root|Users|tmp|mnt)/[^\s`)]*", text)
    assert not absolute, absolute
    named = set(re.findall(r"`\.\./shared/seeds/([\w.-]+)`", text))
    assert len(named) >= 5, named  # the five papers, at least
    seeds = README.parent.parent / "shared" / "seeds"
    if seeds.is_dir():  # beside the repository (a developer's or CI's machine)
        assert not [n for n in named if not (seeds / n).is_file()], sorted(named)


def test_the_sweep_table_and_the_example_sweep_are_documented():
    from fabricsim.point import figure_columns

    text = README.read_text()
    for col in ["point", "status", "error"] + figure_columns():
        assert f"`{col}`" in text, f"sweep.parquet column {col} is not documented in the README"
    example = (README.parent / "examples" / "sweep" / "loss.toml").read_text()
    assert example in text, "the README quotes examples/sweep/loss.toml as it is"
