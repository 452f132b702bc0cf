"""Workloads and models the planner knows: built-in data files, local models, the user's catalog."""

from sparktop.catalog.loader import (
    Catalog,
    CatalogEntry,
    CatalogError,
    KvDtype,
    ModelSpec,
    Quant,
    load_catalog,
    user_catalog_path,
)

__all__ = [
    "Catalog",
    "CatalogEntry",
    "CatalogError",
    "KvDtype",
    "ModelSpec",
    "Quant",
    "load_catalog",
    "user_catalog_path",
]
