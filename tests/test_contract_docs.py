"""The contract the code cites is written down in the repository (docs/contract/).

Comments, docstrings, tests and the Markdown files cite contract ids (GW-12, OB-1..12, EP-2/13), improvements
("improvement 12", "IMP-3") and numbered sections ("gateway.md §13"). Each of them must lead a reader who has
only this checkout to an entry in docs/contract/: an id to a line starting with the id in bold, an improvement
to a "**Improvement N**" or "**IMP-N**" entry, a section to a heading numbered the same. Pure file reading.
"""
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "docs" / "contract"
PAGES = ("gateway", "formats", "security", "models", "dashboard", "suite-cli-mcp")

# vendor: third-party files copied unchanged (ui/vendor for the Review page, tests/vendor for axe-core), which
# cite no contract: their ids (the WCAG's and the EN's in axe) are not ours
SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", "node_modules", "build", "dist", ".pytest_cache", "vendor", "site"}
TEXT = {".py", ".md", ".js", ".css", ".html", ".json", ".toml", ".txt", ".yaml", ".yml", ".cfg", ".ini", ".sh"}

# One id, optionally with a second word part (GW-ID-1); ranges follow it: OB-1..12, COST-1/2, COL-3..5/7.
ID = r"[A-Z][A-Z\d]{0,7}(?:-[A-Z]{2,8})?-\d{1,3}[a-z]?"
CITED = re.compile(r"\b(" + ID + r")((?:(?:\.\.|/)[0-9]{1,3}[a-z]?)*)\b")
DEFINED = re.compile(r"^(?:#+ +)?\*\*(" + ID + r")\*\*", re.MULTILINE)

# Strings the id pattern matches that are not contract ids.
NOT_IDS = {
    "UTF-8", "UTF-16", "UTF-32",  # text encodings
    "SHA-256",  # the hash
    "CC-BY-4",  # from the licence name CC-BY-4.0
    "GLM-4",  # a model family name in the catalog fixtures
    "N-1",  # arithmetic in prose: "--workers N forks N-1 more processes"
    "SECRET-77",  # a fake key in a test
}

IMPROVEMENT = re.compile(r"(?<![A-Za-z])improvements? ?#?([0-9]+(?: ?(?:-|–|\.\.|,|and) ?[0-9]+)*)", re.IGNORECASE)
IMPROVEMENT_DEFINED = re.compile(r"^\*\*(?:Improvement |IMP-)([0-9]+)\*\*", re.MULTILINE)
SECTION = re.compile(r"\b(" + "|".join(re.escape(p) for p in PAGES) + r")\.md ?§ ?([0-9]+(?:\.[0-9]+[a-z]?)?)")
PAGE_NAME = re.compile(r"\b(" + "|".join(re.escape(p) for p in PAGES) + r")\.md\b")


def sources():
    """Every text file of the checkout outside docs/contract/, with its path and text."""
    for top, dirs, files in os.walk(ROOT):
        here = Path(top).relative_to(ROOT)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")
                         and (here / d).as_posix() != "docs/contract")
        for name in sorted(files):
            if Path(name).suffix in TEXT:
                yield (here / name).as_posix(), (Path(top) / name).read_text(encoding="utf-8", errors="replace")


def expand(first, tail):
    """`OB-1` with `..12` gives OB-1 to OB-12; with `/4` it gives OB-1 and OB-4; both chain (COL-3..5/7)."""
    prefix, number = re.fullmatch(r"(.*-)([0-9]+)[a-z]?", first).groups()
    ids, last = [first], int(number)
    for step, value in re.findall(r"(\.\.|/)([0-9]+[a-z]?)", tail):
        upto = int(re.match(r"[0-9]+", value).group())
        if step == "..":
            ids += [f"{prefix}{n}" for n in range(last + 1, upto + 1)]
        else:
            ids.append(prefix + value)
        last = upto
    return ids


def numbers(text):
    """`1-23`, `16, 17`, `1, 4-7` as the numbers they name."""
    found = []
    for part in re.split(r" ?(?:,|and) ?", text):
        ends = [int(n) for n in re.split(r" ?(?:-|–|\.\.) ?", part) if n]
        found += range(ends[0], ends[-1] + 1)
    return found


def pages():
    return {name: (CONTRACT / f"{name}.md").read_text(encoding="utf-8") for name in PAGES}


def cited_ids():
    where = {}
    for name, text in sources():
        for match in CITED.finditer(text):
            for cited in expand(match.group(1), match.group(2)):
                if cited not in NOT_IDS:
                    where.setdefault(cited, name)
    return where


def test_the_contract_pages_exist():
    assert (CONTRACT / "README.md").is_file()
    assert all((CONTRACT / f"{name}.md").is_file() for name in PAGES)


def test_every_cited_id_is_defined():
    defined = {i for text in pages().values() for i in DEFINED.findall(text)}
    missing = sorted(f"{i} (cited in {name})" for i, name in cited_ids().items() if i not in defined)
    assert not missing, f"{len(missing)} cited ids have no entry in docs/contract/:\n" + "\n".join(missing)


def test_no_id_is_defined_twice_on_one_page():
    for name, text in pages().items():
        ids = DEFINED.findall(text)
        assert len(ids) == len(set(ids)), (name, sorted({i for i in ids if ids.count(i) > 1}))


def test_every_cited_improvement_is_defined():
    defined = {name: {int(n) for n in IMPROVEMENT_DEFINED.findall(text)} for name, text in pages().items()}
    anywhere = set().union(*defined.values())
    missing = []
    for name, text in sources():
        for line in text.splitlines():
            named = PAGE_NAME.findall(line)
            for match in IMPROVEMENT.finditer(line):
                for n in numbers(match.group(1)):
                    known = defined[named[-1]] if named else anywhere
                    if n not in known:
                        missing.append(f"improvement {n} ({named[-1] + '.md, ' if named else ''}{name})")
    assert not missing, "\n".join(sorted(set(missing)))


def test_every_section_citation_has_a_heading():
    headings = {name: set(re.findall(r"^#+ +([0-9]+(?:\.[0-9]+[a-z]?)?)[. ]", text, re.MULTILINE))
                for name, text in pages().items()}
    missing = sorted({f"{page}.md §{number} ({name})" for name, text in sources()
                      for page, number in SECTION.findall(text) if number not in headings[page]})
    assert not missing, "\n".join(missing)
