"""The checked-in JSON Schema must match the pydantic models it is generated from."""

from __future__ import annotations

import json
from pathlib import Path

from loopguard.cli import render_schema

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "schema" / "loopguard.schema.json"


def test_schema_file_is_up_to_date() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render_schema(), (
        "schema/loopguard.schema.json is stale; regenerate it with: loopguard schema > schema/loopguard.schema.json"
    )


def test_schema_describes_profiles_as_partial_policies() -> None:
    schema = json.loads(render_schema())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["profiles"]["additionalProperties"] == {"$ref": "#/$defs/ProfileOverlay"}
    overlay = schema["$defs"]["ProfileOverlay"]
    assert overlay["additionalProperties"] is False
    assert "version" not in overlay["properties"] and "detectors" in overlay["properties"]
    # mappings merge deeply, so a profile may set one field of a budget...
    assert "required" not in schema["$defs"]["BudgetPartial"]
    # ...but a rule replaces by id, so it stays complete
    assert overlay["properties"]["rules"]["items"] == {"$ref": "#/$defs/Rule"}
