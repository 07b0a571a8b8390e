"""The README and docs/*.md name only commands and options that exist, and their links resolve.

Commands and options are checked against click's command tree (``batsim_google.cli.main``), never
by running a command:

- every ``batsim-google SUBCOMMAND [SUB] ...`` in a code block (``\\`` continuations joined) or in
  inline code must name an existing command, and each ``-x``/``--option`` after it on that command
  line must be an option of that command (a shell separator or comment ends the command line);
- inline code that starts with a command's name without the prefix (``generate --arrival-scale``,
  ``failures PLATFORM --machine-events DIR``) is checked the same way when its first words name a
  command;
- the options in the first column of a table whose header starts with "option" must belong to the
  command the table documents: the commands named in backticks in that header cell, else the
  command named in backticks in the section's heading, else the first ``batsim-google`` command
  of the section; a table of options with none of these fails.

Any other ``--option`` in inline code (prose such as "``--priority-levels 0`` compares raw
values") must at least be an option of some ``batsim-google`` command, of a ``bench/`` script, or
one of the few options of Batsim and uv that the pages name (``FOREIGN_OPTIONS``): which command it
belongs to is not checked there, the prose not saying so in a form a test can read.

Relative links (``[text](path#anchor)``) must reach an existing file and, for a Markdown file, an
existing heading (GitHub's anchors).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from batsim_google.cli import main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Pages written on another branch: a link to one is accepted while it is absent, checked once present.
PENDING_PAGES = {ROOT / "docs" / "python.md"}

# Options of other programs that the pages name in prose: Batsim's and uv's.
FOREIGN_OPTIONS = {
    "--enable-compute-sharing",
    "--enable-dynamic-jobs",
    "--acknowledge-dynamic-jobs",
    "--enable-profile-reuse",
    "--forward-unknown-events",
    "--forward-profiles-on-submission",
    "--disable-schedule-tracing",
    "--disable-machine-state-tracing",
    "--disable-energy-tracing",  # our patched Batsim's (engine/)
    "--forget-ended-jobs",  # our patched Batsim's (engine/)
    "--extra",
}
SEPARATORS = {"|", "||", "&", "&&", ";", ">", ">>", "2>", "<"}
OPTION = re.compile(r"^-{1,2}[A-Za-z][A-Za-z0-9-]*")
PREFIX = re.compile(r"(?<![\w./-])batsim-google(?=[\s`]|$)")


def command_tree() -> dict[tuple[str, ...], click.Command]:
    """Every command by its path of names, the root being ()."""
    tree: dict[tuple[str, ...], click.Command] = {}

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        tree[path] = command
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk(sub, (*path, name))

    walk(main, ())
    return tree


TREE = command_tree()


def options_of(command: click.Command) -> set[str]:
    names = {"--help"}
    for param in command.params:
        if isinstance(param, click.Option):
            names.update(param.opts)
            names.update(param.secondary_opts)
    return names


def page_name(page: Path) -> str:
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else page.name


# --- reading the pages ---------------------------------------------------------------------------


def blocks_and_prose(text: str):
    """(code block lines with continuations joined, prose lines), each line with its number."""
    code, prose = [], []
    in_block = False
    pending, pending_line = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_block = not in_block
            continue
        if in_block:
            if not pending:
                pending_line = number
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            code.append((pending_line, pending + line))
            pending = ""
        else:
            prose.append((number, line))
    return code, prose


def inline_spans(text: str):
    """Inline code spans outside code blocks, with their line number (a span may cross lines)."""
    code_free = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    code_free = code_free.replace("\\`", "")  # an escaped backtick opens no span
    for match in re.finditer(r"(?<!`)`([^`]+)`(?!`)", code_free):
        yield code_free.count("\n", 0, match.start()) + 1, " ".join(match.group(1).split())


def split_words(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError:  # an unbalanced quote in prose: plain words will do
        return line.split()


def resolve(words: list[str]) -> tuple[tuple[str, ...], list[str], str | None]:
    """The command path the words start with, the words after it, and an error if a name is wrong."""
    path: tuple[str, ...] = ()
    rest = list(words)
    while isinstance(TREE[path], click.Group) and rest and not rest[0].startswith("-"):
        name = rest[0].strip("[]()")
        if (*path, name) not in TREE:
            return path, rest, f"no command {' '.join((*path, name))!r}"
        path = (*path, name)
        rest = rest[1:]
    return path, rest, None


def option_words(words: list[str]) -> list[str]:
    found = []
    for word in words:
        if word in SEPARATORS or word.startswith("#"):
            break
        match = OPTION.match(word.strip("[](){}"))
        if match:
            found.append(match.group(0))
    return found


def command_lines(page: Path):
    """(line, text, words after the prefix, prefixed?) of every command line of the page."""
    text = page.read_text()
    code, _ = blocks_and_prose(text)
    for number, line in code:
        for match in PREFIX.finditer(line):
            yield number, line.strip(), split_words(line[match.end() :]), True
    for number, span in inline_spans(text):
        match = PREFIX.search(span)
        if match:
            yield number, span, split_words(span[match.end() :]), True
        elif span.split() and (span.split()[0],) in TREE:
            yield number, span, split_words(span), False


def command_line_errors(page: Path) -> list[str]:
    errors = []
    for number, line, words, prefixed in command_lines(page):
        path, rest, error = resolve(words)
        if error:
            if prefixed:
                errors.append(f"{page_name(page)}:{number}: {error}: {line}")
            continue  # unprefixed inline code that only starts like a command
        if not path:
            continue
        known = options_of(TREE[path])
        for option in option_words(rest):
            if option not in known:
                errors.append(f"{page_name(page)}:{number}: {' '.join(path)} has no option {option}: {line}")
    return errors


# --- tables of options ---------------------------------------------------------------------------


def cells(row: str) -> list[str]:
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def commands_named(text: str) -> list[tuple[str, ...]]:
    """Command paths named in backticks in a heading or a header cell."""
    found = []
    for span in re.findall(r"`([^`]+)`", text):
        path, _, error = resolve(split_words(PREFIX.sub("", span)))
        if path and not error:
            found.append(path)
    return found


def option_table_errors(page: Path) -> list[str]:
    errors = []
    lines = page.read_text().splitlines()
    in_block = False
    section_commands: list[tuple[str, ...]] = []  # from the heading, else the first command line
    heading_commands: list[tuple[str, ...]] = []
    first_command: tuple[str, ...] | None = None
    number = 0
    while number < len(lines):
        line = lines[number]
        if line.lstrip().startswith("```"):
            in_block = not in_block
        elif not in_block and line.startswith("#"):
            heading_commands = commands_named(line)
            first_command = None
        if first_command is None:
            match = PREFIX.search(line)
            if match:
                path, _, error = resolve(split_words(line[match.end() :]))
                if path and not error:
                    first_command = path
        section_commands = heading_commands or ([first_command] if first_command else [])
        is_table = (
            not in_block
            and line.startswith("|")
            and number + 1 < len(lines)
            and re.fullmatch(r"\|?\s*:?-{3,}.*", lines[number + 1].strip())
        )
        if not is_table:
            number += 1
            continue
        header = cells(line)
        body_start = number + 2
        number = body_start
        while number < len(lines) and lines[number].startswith("|"):
            number += 1
        if not header[0].lower().startswith("option"):
            continue
        documented = commands_named(header[0]) or section_commands
        if not documented:
            errors.append(f"{page_name(page)}:{body_start - 1}: a table of options under no known command")
            continue
        for row_number in range(body_start, number):
            first = cells(lines[row_number])[0]
            for option in re.findall(r"(?<![\w-])-{1,2}[A-Za-z][A-Za-z0-9-]*", first):
                for path in documented:
                    if option not in options_of(TREE[path]):
                        errors.append(f"{page_name(page)}:{row_number + 1}: {' '.join(path)} has no option {option}")
    return errors


# --- options in prose ----------------------------------------------------------------------------


def known_options() -> set[str]:
    options = set(FOREIGN_OPTIONS)
    for command in TREE.values():
        options |= options_of(command)
    for script in (ROOT / "bench").glob("*.py"):
        options |= set(re.findall(r"add_argument\(\s*\"(--[\w-]+)\"", script.read_text()))
    return options


def prose_option_errors(page: Path) -> list[str]:
    known = known_options()
    errors = []
    for number, span in inline_spans(page.read_text()):
        for option in re.findall(r"(?<![\w-])--[A-Za-z][A-Za-z0-9-]*", span):
            if option not in known:
                errors.append(f"{page_name(page)}:{number}: no command has option {option}: `{span}`")
    return errors


# --- links ---------------------------------------------------------------------------------------


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but - and _ dropped, spaces as -."""
    found, seen = set(), {}
    in_block = False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith("```"):
            in_block = not in_block
        if in_block or not line.startswith("#"):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def link_errors(page: Path) -> list[str]:
    errors = []
    text = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), page.read_text(), flags=re.S)
    for match in re.finditer(r"\]\(([^)\s]+)\)", text):
        target = match.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        number = text.count("\n", 0, match.start()) + 1
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists():
            if linked not in PENDING_PAGES:
                errors.append(f"{page_name(page)}:{number}: {target}: no such file")
            continue
        if anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            errors.append(f"{page_name(page)}:{number}: {target}: no such heading")
    return errors


# --- the tests -----------------------------------------------------------------------------------


def test_the_docs_have_pages():
    assert (ROOT / "docs").is_dir() and len(PAGES) > 1


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_command_lines_name_existing_commands_and_options(page):
    assert command_line_errors(page) == []


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_option_tables_list_options_of_their_command(page):
    assert option_table_errors(page) == []


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_options_in_prose_exist(page):
    assert prose_option_errors(page) == []


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_relative_links_resolve(page):
    assert link_errors(page) == []


def test_a_made_up_option_or_command_is_caught(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n```sh\nuv run batsim-google generate --preset google \\\n    --made-up 1 -o w.json\n"
        "uv run batsim-google trace nothing x\n```\n\n"
        "Inline: `batsim-google run --platform p --no-such-thing`, `failures P --nonsense`.\n\n"
        "## `fit`\n\n| option | meaning |\n| --- | --- |\n| `--classes K` | fine |\n| `--bogus\\|x` | not |\n\n"
        "[a link](missing.md) and [an anchor](#page) and [another](#nowhere); `--priority-level 0`.\n"
    )
    errors = command_line_errors(page) + option_table_errors(page) + link_errors(page) + prose_option_errors(page)
    text = "\n".join(errors)
    assert "generate has no option --made-up" in text
    assert "no command 'trace nothing'" in text
    assert "run has no option --no-such-thing" in text
    assert "failures has no option --nonsense" in text
    assert "fit has no option --bogus" in text
    assert "missing.md: no such file" in text and "#nowhere: no such heading" in text
    assert "#page" not in text.replace("#nowhere", "") and "--classes" not in text
    assert "no command has option --priority-level" in text
    assert len(errors) == 11  # options in inline code (commands, tables) are also counted as prose
