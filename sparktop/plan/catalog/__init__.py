"""Workloads and models the planner knows: built-in data files, local models, the user's catalog.

entries.py: what the catalog holds; lookup.py: the merged `Catalog` and its lookups; loader.py: reading
the TOML files and the local models (discovery.py) into one; params.py: the parameters a workload has."""

from sparktop.plan.catalog.entries import CatalogEntry, CatalogError, KvDtype, ModelSpec, Quant
from sparktop.plan.catalog.loader import load_catalog
from sparktop.plan.catalog.lookup import Catalog
from sparktop.settings.files import user_catalog_path

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
