"""Themes (dashboard.md §12, TH-1..7): one token set, three colourings, and the contrast rule.

A theme is `ui/themes/<name>.css` holding one `:root { --token: value; }` block. The base theme
(`rainforest`) defines every token; the others override colours. The page carries every theme at once
(`html[data-theme='<name>']` blocks), so switching is one attribute and no reload.

    python -m benchwarmers.core.themes      the theme check (TH-7): exit 1 on any problem

Decision (IMP-14 wins over LOG-4): a saved theme change is written to the change log (`field: "theme"`).
"""

import re
import sys
from pathlib import Path

from . import fileio, paths


FOLDER = paths.CODE / "ui" / "themes"
BASE = "rainforest"
DEFAULT = "hardwood"
LABELS = {"rainforest": "Rainforest Light", "dark": "Rainforest Dark", "hardwood": "Hardwood"}
TOKEN = re.compile(r"(--[\w-]+)\s*:\s*([^;]+);")
ROOT = re.compile(r":root\s*\{([^}]*)\}")
REQUIRED = ("ink", "ink-2", "ink-deep", "paper", "paper-2", "band", "signal", "link", "muted", "line", "brand",
            "primary", "primary-deep", "sky", "warn", "err")
FALLBACKS = {"on-err": "#ffffff", "log-ink": "var(--paper)", "log-ground": "var(--ink-deep)"}
# TH-7: (text, ground, minimum ratio)
PAIRS = [(t, g, 4.5) for t, g in (
    ("ink", "paper"), ("ink", "paper-2"), ("ink", "band"), ("muted", "paper"), ("muted", "paper-2"),
    ("link", "paper"), ("link", "paper-2"), ("err", "paper-2"), ("warn", "paper-2"), ("paper", "ink"),
    ("on-err", "err"), ("log-ink", "log-ground"), ("ink-deep", "sky"),
    ("paper", "primary"))] + [("brand", "paper", 3.0)]  # paper on primary: our buttons (bench.css), beyond TH-7's list
FLOOR_PAIRS = [("ink", "floor-ground", 4.5), ("muted", "floor-ground", 4.5), ("link", "floor-ground", 4.5)]
SWATCH = ("paper", "band", "ink", "brand", "primary", "signal", "link", "err")
# TH-5's status chip grounds: `--chip-<kind>` = this share of the token over --paper-2, worked out per theme here
# (not by the browser's color-mix) so the contrast check reads the very colours the page shows.
CHIPS = {"ok": ("primary", 13), "warn": ("signal", 35), "err": ("err", 11)}
HEX = re.compile(r"#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})")


def names() -> list[str]:
    """TH-1's order: the three known themes, then any other file sorted."""
    found = sorted(p.stem for p in FOLDER.glob("*.css"))
    return [n for n in LABELS if n in found] + [n for n in found if n not in LABELS]


def label(name: str) -> str:
    return LABELS.get(name) or name.replace("-", " ").title()


def tokens(name: str) -> dict[str, str]:
    """`{"--token": value}` from the theme file's first `:root` block (TH-2)."""
    text = (FOLDER / f"{name}.css").read_text(encoding="utf-8")
    block = ROOT.search(re.sub(r"/\*.*?\*/", "", text, flags=re.S))
    return dict((k, v.strip()) for k, v in TOKEN.findall(block.group(1))) if block else {}


def merged(name: str) -> dict[str, str]:
    """A theme's tokens over the base's, with the optional tokens' fallbacks, `--` dropped from names."""
    values = {f"--{k}": v for k, v in FALLBACKS.items()}
    values.update(tokens(BASE))
    values.update(tokens(name))
    return {k[2:]: v for k, v in values.items()}


def css() -> str:
    """TH-2: `:root{base}` then one `html[data-theme='<n>']{...}` per other theme, each with its chip grounds."""
    def block(selector: str, found: dict[str, str], name: str) -> str:
        return selector + "{" + "".join(f"{k}:{v};" for k, v in {**found, **chip_tokens(name)}.items()) + "}"
    out = [block(":root", tokens(BASE), BASE)]
    out += [block(f"html[data-theme='{n}']", tokens(n), n) for n in names() if n != BASE]
    return "\n".join(out)


def mix(colour: str, ground: str, share: int) -> str:
    """`colour` laid over `ground` at `share` percent, as `#rrggbb` (what CSS color-mix in srgb gives)."""
    def channels(value: str) -> list[int]:
        h = value.lstrip("#")
        h = "".join(c * 2 for c in h) if len(h) == 3 else h
        return [int(h[i:i + 2], 16) for i in (0, 2, 4)]
    return "#" + "".join(f"{round(a * share / 100 + b * (100 - share) / 100):02x}"
                         for a, b in zip(channels(colour), channels(ground)))


def chip_tokens(name: str) -> dict[str, str]:
    """`{"--chip-ok": "#...", ...}` for theme `name` (TH-5), from CHIPS."""
    found = merged(name)
    ground = resolve(found, "paper-2")
    return {f"--chip-{kind}": mix(resolve(found, token), ground, share) for kind, (token, share) in CHIPS.items()
            if HEX.fullmatch(resolve(found, token)) and HEX.fullmatch(ground)}


def settings_path() -> Path:
    return paths.file("config", "ui.json")


def saved() -> str:
    value = fileio.read_json(settings_path()).get("theme")
    return value if value in names() else DEFAULT


def in_use(preview: str = "") -> str:
    """TH-3: a known `?theme=` preview, else the saved theme, else Hardwood."""
    return preview if preview in names() else saved()


def save(theme: str) -> tuple[list[str], str | None]:
    """ST-2: `(errors, old)`; the theme is written under the file's lock."""
    known = names()
    if theme not in known:
        return [f"no theme called '{theme}'; there are {', '.join(known)}"], None
    old = saved()
    fileio.update(settings_path(), lambda data: data.__setitem__("theme", theme))
    return [], old


def swatch(name: str) -> list[str]:
    found = merged(name)
    return [resolve(found, t) for t in SWATCH]


def resolve(found: dict[str, str], token: str) -> str:
    """A token's value with `var(--x)` references followed (TH-7)."""
    value, seen = found.get(token, ""), set()
    while value.startswith("var(--") and value not in seen:
        seen.add(value)
        value = found.get(value[6:].split(")")[0].split(",")[0].strip(), "")
    return value


def luminance(colour: str) -> float:
    """WCAG 2 relative luminance of `#rgb` / `#rrggbb`."""
    h = colour.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    channels = [int(h[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def ratio(a: str, b: str) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def problems(name: str) -> list[str]:
    """TH-7 for one theme: each missing token or illegible pair, as a sentence."""
    found = {**merged(name), **{k[2:]: v for k, v in chip_tokens(name).items()}}
    wrong = [f"{name}: --{t} is missing" for t in REQUIRED if t not in found]
    pairs = PAIRS + [("ink", f"chip-{kind}", 4.5) for kind in CHIPS] + (
        FLOOR_PAIRS if "floor-ground" in found else [])
    for text, ground, minimum in pairs:
        a, b = resolve(found, text), resolve(found, ground)
        if not (HEX.fullmatch(a) and HEX.fullmatch(b)):
            wrong.append(f"{name}: --{text} on --{ground} is not two hex colours ({a!r}, {b!r})")
        elif ratio(a, b) < minimum:
            wrong.append(f"{name}: --{text} on --{ground} is {ratio(a, b):.2f}, under {minimum}")
    return wrong


def main() -> int:
    every = names()
    wrong = [p for n in every for p in problems(n)]
    for line in wrong:
        print(line)
    print(f"{len(every)} themes: " + (f"{len(wrong)} problems" if wrong else "all legible"))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
