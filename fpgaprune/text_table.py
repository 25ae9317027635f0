"""Aligned plain-text tables (the sparsity table, the quantization report)."""


def format_rows(header: tuple, rows: list) -> list[str]:
    """Header, a dashed rule, then the rows; every cell left-aligned in its column."""
    cells = [tuple(header)] + [tuple(str(cell) for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return lines
