"""Help text helper shared by the option modules."""

from __future__ import annotations


def paragraphs(text: str) -> str:
    """Join the hard-wrapped lines of each paragraph.

    oslo-config-generator wraps every line of a help text on its own, so
    source line breaks would show up as ragged lines in the sample file.
    """
    blocks = text.strip().split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in block.splitlines()) for block in blocks)
