#!/usr/bin/env python3
"""help2man.py TOOL DOCDIR: a manual page (roff, section 1) for TOOL from its --help text on
stdin: the first line is the summary, the rest is shown as written (it is already laid out
for a terminal), and SEE ALSO names the installed docs."""
import sys

tool, docdir = sys.argv[1], sys.argv[2]
text = sys.stdin.read().rstrip("\n")
if not text:
    sys.exit(f"help2man.py: {tool} --help printed nothing")
lines = text.split("\n")
summary = lines[0].strip().rstrip(".")


def roff(line: str) -> str:
    # Backslashes are roff's escape; a leading dot or quote would start a request.
    line = line.replace("\\", "\\e")
    if line.startswith((".", "'")):
        line = "\\&" + line
    return line


out = [
    f'.TH {tool.upper()} 1 "" "fti-rs" "User Commands"',
    ".SH NAME",
    f"{tool} \\- {roff(summary)}",
    ".SH DESCRIPTION",
    ".nf",
]
out += [roff(l) for l in lines]
out += [
    ".fi",
    ".SH SEE ALSO",
    f"The fti-rs documentation in {roff(docdir)} (README.md, and the pages the text above names).",
]
print("\n".join(out))
