"""Aligned plain-text tables (the sparsity table, the quantization report) and numbers as text."""


def format_rows(header: tuple, rows: list) -> list[str]:
    """Header, a dashed rule, then the rows; every cell left-aligned in its column."""
    cells = [tuple(header)] + [tuple(str(cell) for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return lines


def number(value, fmt: str = "%g") -> str:
    """`value` formatted with `fmt`, except that anything that rounds to zero reads "0", never "-0"."""
    text = fmt % value
    return "0" if float(text) == 0 else text
