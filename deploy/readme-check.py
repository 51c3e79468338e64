#!/usr/bin/env python3
"""Keeps README.md's "At a glance" figures equal to bench/RESULTS.md, and README's links alive.

The rule. Every row of the table under README's "## At a glance" has three cells: what was
measured (mode, build, machine: parameters, not checked), the figure, and its source. The source
names where in bench/RESULTS.md the figure comes from:

    [§ Heading](bench/RESULTS.md#heading-anchor) line "TEXT"
    [§ Heading](bench/RESULTS.md#heading-anchor) row "FIRST CELL", column "HEADER"

- The anchor is the GitHub anchor of a RESULTS.md heading; its section runs to the next heading.
- `line "TEXT"`: the one line of that section containing TEXT (exactly one must).
- `row "A", column "H"`: the one table row of that section whose first cell is A, in a table
  with a column headed H; the cited text is that cell. `rows "A", "B"` and `columns "H", "J"`
  cite each row × column in that order (rows outer).
- Several citations are separated by ";"; one without its own link uses the previous link's
  section.

The numbers of the figure cell, read left to right, must split into consecutive runs, one per
citation in order, each run a contiguous sequence of the numbers in its cited text. Numbers are
compared without thousands separators; the README may round a RESULTS number to fewer decimals
(1526.35 may read 1,526), never the other way. A number glued to letters (p50, x2, qrcode-1)
is a name, not a number, on both sides.

Size: README.md stays within 15,000 bytes (the rest belongs in docs/).

Links: every relative link in README.md (and in the files given with --links) must name a file
that exists, and a #anchor into a Markdown file must be one of its headings' anchors.

Usage: python3 deploy/readme-check.py [--readme FILE] [--results FILE] [--links FILE...]
Prints one line per problem and exits 1, or a summary line and exits 0.
"""

import argparse
import os
import re
import sys
from decimal import ROUND_HALF_UP, Decimal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README_BYTES_MAX = 15_000

# A number: not glued to a letter, digit, point or word- before it, nor to a letter or digit after it.
NUMBER = re.compile(r"(?<![\w.])(?<!\w-)(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?!\w)")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
RESULTS_LINK = re.compile(r"\[[^\]]*\]\(bench/RESULTS\.md#([^)\s]+)\)")
LINE_CITE = re.compile(r'\bline "([^"]+)"')
CELL_CITE = re.compile(r'\brows? ("[^"]+"(?:, "[^"]+")*), columns? ("[^"]+"(?:, "[^"]+")*)')
QUOTED = re.compile(r'"([^"]+)"')


def numbers(text):
    """The numbers of a text, in order, as (Decimal value, decimals written)."""
    out = []
    for m in NUMBER.finditer(text.replace("**", "")):
        whole, frac = m.group(1).replace(",", ""), m.group(2)
        out.append((Decimal(whole + ("." + frac if frac else "")), len(frac) if frac else 0))
    return out


def same(readme, results):
    """A README number matches a RESULTS number: equal, or RESULTS rounded to README's decimals."""
    value, places = readme
    other, other_places = results
    if value == other:
        return True
    if places >= other_places:
        return False
    return other.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP) == value


def anchor(heading, seen):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
    n = seen.get(text, 0)
    seen[text] = n + 1
    return text if n == 0 else f"{text}-{n}"


def headings(lines):
    """(anchor, level, line index) of every Markdown heading outside code blocks."""
    out, seen, fenced = [], {}, False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"(#{1,6}) (.+)", line)
        if m:
            out.append((anchor(m.group(2), seen), len(m.group(1)), i))
    return out


def sections(lines):
    """anchor -> the section's lines, from its heading to the next heading of any level."""
    hs = headings(lines)
    out = {}
    for k, (name, _, start) in enumerate(hs):
        end = hs[k + 1][2] if k + 1 < len(hs) else len(lines)
        out[name] = lines[start:end]
    return out


def cells(line):
    """The cells of a Markdown table line (an escaped \\| stays inside its cell)."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def table_header(section, index):
    """The header cells of the table holding section[index] (None when it is not a data row)."""
    if not section[index].lstrip().startswith("|"):
        return None
    top = index
    while top > 0 and section[top - 1].lstrip().startswith("|"):
        top -= 1
    if top + 1 >= len(section) or not re.match(r"\s*\|[\s:|-]+\|?\s*$", section[top + 1]):
        return None
    if index <= top + 1:
        return None  # the header or the separator itself
    return cells(section[top])


def cite(source, results_sections):
    """The cited texts of a source cell, in order, or raises ValueError saying why not."""
    texts = []
    current = None
    for part in [p.strip() for p in source.split(";") if p.strip()]:
        link = RESULTS_LINK.search(part)
        if link:
            current = link.group(1)
        if current is None:
            raise ValueError(f"no bench/RESULTS.md#anchor link before {part!r}")
        if current not in results_sections:
            raise ValueError(f"bench/RESULTS.md has no heading with the anchor #{current}")
        section = results_sections[current]
        found = False
        for m in LINE_CITE.finditer(part):
            found = True
            hits = [ln for ln in section if m.group(1) in ln]
            if len(hits) != 1:
                raise ValueError(f'line "{m.group(1)}" is on {len(hits)} lines of #{current}, not 1')
            texts.append(hits[0])
        for m in CELL_CITE.finditer(part):
            found = True
            for row in QUOTED.findall(m.group(1)):
                for column in QUOTED.findall(m.group(2)):
                    hits = []
                    for i, ln in enumerate(section):
                        header = table_header(section, i)
                        if header is None or column not in header:
                            continue
                        row_cells = cells(ln)
                        if row_cells and row_cells[0] == row and header.index(column) < len(row_cells):
                            hits.append(row_cells[header.index(column)])
                    if len(hits) != 1:
                        raise ValueError(f'row "{row}", column "{column}": {len(hits)} cells in #{current}, not 1')
                    texts.append(hits[0])
        if not found:
            raise ValueError(f'no line "…" or row "…", column "…" citation in {part!r}')
    return texts


def runs_match(figure, cited):
    """Whether `figure` splits into consecutive runs, one per cited list, each contiguous in it."""

    def contiguous(run, within):
        return any(all(same(run[j], within[i + j]) for j in range(len(run))) for i in range(len(within) - len(run) + 1))

    def go(start, k):
        if k == len(cited):
            return start == len(figure)
        remaining = len(cited) - k - 1
        for end in range(start + 1, len(figure) - remaining + 1):
            if contiguous(figure[start:end], cited[k]) and go(end, k + 1):
                return True
        return False

    return bool(figure) and go(0, 0)


def glance_rows(readme_lines):
    """(line number, cells) of every data row of the At a glance table."""
    try:
        start = next(i for i, ln in enumerate(readme_lines) if re.match(r"## At a glance\s*$", ln))
    except StopIteration:
        return None
    rows = []
    for i in range(start + 1, len(readme_lines)):
        line = readme_lines[i]
        if line.startswith("## "):
            break
        if not line.startswith("|") or re.match(r"\|[\s:|-]+\|?\s*$", line):
            continue
        rows.append((i + 1, cells(line)))
    return rows[1:]  # the first is the header


def check_glance(readme_lines, results_lines, problems):
    rows = glance_rows(readme_lines)
    if rows is None:
        problems.append('README: no "## At a glance" section')
        return 0, 0
    if not rows:
        problems.append("README: the At a glance table has no rows")
        return 0, 0
    results_sections = sections(results_lines)
    figures = 0
    for number, row in rows:
        where = f"README line {number}"
        if len(row) != 3:
            problems.append(f"{where}: {len(row)} cells, not 3 (what, figure, source)")
            continue
        what, figure, source = row
        wanted = numbers(figure)
        if not wanted:
            problems.append(f"{where}: the figure cell {figure!r} holds no number")
            continue
        try:
            texts = cite(source, results_sections)
        except ValueError as e:
            problems.append(f"{where}: {e}")
            continue
        cited = [numbers(t) for t in texts]
        if not runs_match(wanted, cited):
            shown = " | ".join(t.strip() for t in texts)
            problems.append(f"{where}: figure {figure!r} is not in what it cites from bench/RESULTS.md: {shown}")
            continue
        figures += len(wanted)
    return len(rows), figures


def check_links(path, problems):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    base = os.path.dirname(path)
    count, fenced = 0, False
    for n, line in enumerate(lines, 1):
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            count += 1
            file, _, frag = target.partition("#")
            full = os.path.normpath(os.path.join(base, file)) if file else path
            if not os.path.exists(full):
                problems.append(f"{os.path.relpath(path, ROOT)} line {n}: link {target}: no such file")
                continue
            if frag and full.endswith(".md"):
                with open(full, encoding="utf-8") as f:
                    names = {h[0] for h in headings(f.read().split("\n"))}
                if frag not in names:
                    problems.append(f"{os.path.relpath(path, ROOT)} line {n}: link {target}: no such heading")
    return count


def main():
    parser = argparse.ArgumentParser(description="README's At a glance figures against bench/RESULTS.md, and its links")
    parser.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    parser.add_argument("--results", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    parser.add_argument("--links", nargs="*", default=[], help="more Markdown files whose links must resolve")
    args = parser.parse_args()
    problems = []
    with open(args.readme, encoding="utf-8") as f:
        readme = f.read()
    with open(args.results, encoding="utf-8") as f:
        results = f.read()
    rows, figures = check_glance(readme.split("\n"), results.split("\n"), problems)
    links = sum(check_links(os.path.abspath(p), problems) for p in [args.readme] + args.links)
    size = len(readme.encode("utf-8"))
    if size > README_BYTES_MAX:
        problems.append(f"README: {size} bytes, over {README_BYTES_MAX}: move detail to docs/")
    for p in problems:
        print("readme-check: " + p)
    if problems:
        print(f"readme-check: FAILED, {len(problems)} problem(s)")
        return 1
    print(
        f"readme-check: {rows} At a glance rows, {figures} figures, each found where it cites bench/RESULTS.md; "
        f"{links} links resolve; README {size} bytes of {README_BYTES_MAX}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
