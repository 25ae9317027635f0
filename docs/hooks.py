"""MkDocs hooks: pages generated from the code at build time, so they cannot go stale.

- `<!-- config-reference -->` becomes the config reference: every key of the pydantic schema
  (`fpgaprune/pipeline/schema.py`), its type, default and allowed values, and the comment beside it in the code.
- `<!-- changelog -->` becomes the repository's CHANGELOG.md, without its title.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from fpgaprune.pipeline.config_reference import config_reference_markdown  # noqa: E402


def on_page_markdown(markdown: str, page, config, files) -> str:
    if "<!-- config-reference -->" in markdown:
        markdown = markdown.replace("<!-- config-reference -->", config_reference_markdown())
    if "<!-- changelog -->" in markdown:
        markdown = markdown.replace("<!-- changelog -->", (ROOT / "CHANGELOG.md").read_text().split("\n", 1)[1])
    return markdown
