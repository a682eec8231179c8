"""Read-only outputs of an image: Hasura's export and TiDB's REGION_LABEL rows."""

from typing import Any

from events.labels import RegionLabelRow
from events.labels import region_label_rows as _rows
from projector.fold.image import Image


def export(image: Image) -> dict[str, Any]:
    """Hasura's `export_metadata` v2: `{"resource_version": n, "metadata": {key: value}}`.

    Reads `head` (everything committed, as the leader sees it) and bumps nothing.
    Values are JSON-ready dicts; keys are sorted.
    """
    return {
        "resource_version": image.resource_version,
        "metadata": {
            key: value.model_dump(mode="json") for key, value in sorted(image.head.items())
        },
    }


def region_label_rows(image: Image, *, published: bool = True) -> list[RegionLabelRow]:
    """`INFORMATION_SCHEMA.REGION_LABEL` of the image: followers' view unless `published=False`."""
    view = image.published if published else image.head
    return _rows(view.label_rules())
