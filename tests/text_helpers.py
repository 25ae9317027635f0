"""Checks on text that people read: the console, the report, the tables."""

import re

# A zero with a minus sign: "-0", "−0", "&minus;0", "-0.00"; not "-0.5", "x-0" or "-01".
NEGATIVE_ZERO = re.compile(r"(\u2212|&minus;|(?<![\w.-])-)0(\.0+)?(?![\w.])")


def negative_zeros(text: str) -> list:
    """Each negative zero in `text`, with some context around it."""
    return [text[max(0, m.start() - 40) : m.end() + 20] for m in NEGATIVE_ZERO.finditer(text)]
